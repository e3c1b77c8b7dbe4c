"""Installer steps through the funnel (guards/proc.stream): output to the log, the downloads it
reports parsed into a live bar (terminal) or heartbeat lines (no terminal)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuron_env.errors import CommandTimeout
from neuron_env.guards import redact
from neuron_env.install.downloads import Rate, Tally, figures, human
from neuron_env.target_python import launch
from neuron_env.util.progress import Heartbeat, Progress

if TYPE_CHECKING:  # rich: imported only when a bar is shown
    from neuron_env.install.bar import Bar

__all__ = ["Log", "Progress", "StepResult", "installer_env", "run_step"]


@dataclass(frozen=True)
class StepResult:
    name: str
    argv: tuple[str, ...]
    returncode: int
    output: str
    elapsed: float

    def serialize(self) -> dict:
        return {"name": self.name, "returncode": self.returncode,
                "elapsed_s": round(self.elapsed, 3)}


class Log:
    """The installer's output. A full disk must not turn an install failure into a crash, so
    write errors only stop the log (and say so in `error`)."""

    def __init__(self, path: str | None) -> None:
        self.path, self.error, self.f = path, None, None
        if path:
            try:
                from neuron_env.install.lock import open_new

                self.f = os.fdopen(open_new(path), "a", encoding="utf-8")
            except OSError as e:
                self.error = f"cannot write the log {path}: {e.strerror or e}"

    def write(self, text: str) -> None:
        if self.f:
            try:
                self.f.write(redact.text(text))
                self.f.flush()
            except OSError as e:
                self.error = f"log {self.path} stopped: {e.strerror or e}"
                self.close()

    def close(self) -> None:
        if self.f:
            with contextlib.suppress(OSError):
                self.f.close()
            self.f = None


class _Lines:
    """Chunks from the child -> whole lines to the log (redaction sees whole lines) and to
    `on_line` (the download watcher)."""

    def __init__(self, log: Log, on_line=None) -> None:
        self.log, self.on_line, self.pending = log, on_line, b""

    def __call__(self, data: bytes) -> None:
        head, sep, self.pending = (self.pending + data).rpartition(b"\n")
        if sep:
            self._emit((head + sep).decode("utf-8", "replace"))

    def _emit(self, text: str) -> None:
        self.log.write(text)
        if self.on_line is not None:
            for line in text.splitlines():
                self.on_line(line)

    def flush(self) -> None:
        if self.pending:
            self._emit(self.pending.decode("utf-8", "replace") + "\n")
            self.pending = b""


class Watch:
    """What people see while one step runs: the downloads its output reports, as a live bar
    on a terminal, else as heartbeat lines every HEARTBEAT seconds; a summary line after."""

    def __init__(self, progress: Progress, verb: str, parallel: bool = False,
                 clock=time.monotonic) -> None:
        self.progress, self.verb, self.clock = progress, verb, clock
        self.tally, self.rate, self.beat = Tally(parallel), Rate(), Heartbeat()
        self.bar: Bar | None = None
        self.first: float | None = None
        self.last: float | None = None

    def line(self, text: str) -> None:
        if not self.tally.feed(text):
            return
        now = self.clock()
        self.first = self.first if self.first is not None else now
        self.last = now
        self.rate.add(now, self.tally.done)
        if self.bar is None and self.progress.tty and self.tally.files:
            from neuron_env.install.bar import Bar  # rich: only now that a bar is shown

            self.bar = Bar(self.progress.stream, self.verb)
        if self.bar is not None:
            self.bar.update(self.tally, self.rate.per_second())

    def tick(self, elapsed: float) -> None:
        if self.tally.files:
            self.rate.add(self.clock(), self.tally.done)
        if self.bar is not None:
            self.bar.update(self.tally, self.rate.per_second())
        elif self.beat.due(elapsed):
            what = f"; {figures(self.tally, self.rate.per_second())}" if self.tally.files else ""
            self.progress.say(f"  ... still {self.verb} ({elapsed:.0f}s{what})")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        done, n = self.tally.done, len(self.tally.files)
        if n and done:
            took = max((self.last or 0) - (self.first or 0), 0.0)
            speed = f" ({human(done / took)}/s)" if took > 0.05 else ""
            self.progress.say(f"  downloaded {n} file{'s' if n > 1 else ''}, {human(done)} "
                              f"in {took:.1f}s{speed}")


def run_step(name: str, argv: list[str], *, timeout: float, env: dict[str, str], log: Log,
             progress: Progress, activity: str, parallel: bool = False) -> StepResult:
    """Run one installer command (the funnel's stream mode): output to the log as it comes,
    downloads shown live (see Watch), the tail back for error messages. parallel: the
    installer downloads several files at once (uv)."""
    log.write(f"\n$ {' '.join(argv)}\n")
    progress.say(activity)
    watch = Watch(progress, activity.split(" ", 1)[0].lower(), parallel)
    lines = _Lines(log, on_line=watch.line)
    try:
        res = launch.stream_command(argv, timeout=timeout, sink=lines, tick=watch.tick,
                                     env=env)
        lines.flush()
    finally:
        watch.close()
    if res.timed_out:
        log.write(f"[neuron-env] {name}: killed after {timeout:.0f}s\n")
        raise CommandTimeout(
            f"{name} did not finish within {timeout:.0f}s (index slow or hung?)",
            hint="check the index URLs are reachable, or raise --timeout; "
                 f"installer output: {log.path}")
    if res.error:
        log.write(f"[neuron-env] {name}: could not start: {res.error}\n")
    rc = res.returncode if res.returncode is not None else 127
    log.write(f"[neuron-env] {name}: exit {rc} in {res.elapsed:.1f}s\n")
    return StepResult(name, tuple(argv), rc, res.stdout or (res.error or ""), res.elapsed)


# pip/uv settings from the caller's environment that a step keeps: how to reach the network
# (proxy, CA bundle, client certificate) and the download cache, never WHERE packages come from
_OURS = ("PIP_CONFIG_FILE", "UV_NO_CONFIG", "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_NO_INPUT")
KEPT = ("PIP_CERT", "PIP_CLIENT_CERT", "PIP_PROXY", "PIP_CACHE_DIR", "PIP_NO_CACHE_DIR",
        "UV_CACHE_DIR", "UV_NO_CACHE", "UV_NATIVE_TLS")


def installer_env() -> dict[str, str]:
    """The base environment of every installer step: the host's pip.conf, uv.toml and PIP_* /
    UV_* settings are cut off (PIP_CONFIG_FILE=/dev/null, UV_NO_CONFIG=1; only KEPT survive),
    so a step's indexes are exactly those the plan shows, which the step then sets itself
    (installers.sources, mirrors.auth_env)."""
    env = launch.target_env({"PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1",
                             "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"})
    return {k: v for k, v in env.items()
            if not k.startswith(("PIP_", "UV_")) or k in KEPT or k in _OURS}
