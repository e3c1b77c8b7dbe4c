"""Installer steps through the funnel (util/proc.stream): output to the log, progress lines."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

from neuron_env.errors import CommandTimeout
from neuron_env.util import proc, redact

HEARTBEAT = 10.0


class Progress:
    """Plain progress lines with elapsed time on stderr (never stdout: JSON lives there)."""

    def __init__(self, quiet: bool = False, stream=None) -> None:
        self.t0 = time.monotonic()
        self.quiet, self.stream = quiet, stream or sys.stderr

    def say(self, msg: str) -> None:
        if not self.quiet:
            self.stream.write(redact.text(f"[{time.monotonic() - self.t0:6.1f}s] {msg}\n"))
            self.stream.flush()


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
                self.f = open(path, "a", encoding="utf-8")  # noqa: SIM115
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
    """Chunks from the child -> whole lines to the log (redaction sees whole lines)."""

    def __init__(self, log: Log) -> None:
        self.log, self.pending = log, b""

    def __call__(self, data: bytes) -> None:
        head, sep, self.pending = (self.pending + data).rpartition(b"\n")
        if sep:
            self.log.write((head + sep).decode("utf-8", "replace"))

    def flush(self) -> None:
        if self.pending:
            self.log.write(self.pending.decode("utf-8", "replace") + "\n")
            self.pending = b""


def run_step(name: str, argv: list[str], *, timeout: float, env: dict[str, str], log: Log,
             progress: Progress, activity: str) -> StepResult:
    """Run one installer command (the funnel's stream mode): output to the log as it comes,
    a heartbeat on stderr, the tail back for error messages."""
    log.write(f"\n$ {' '.join(argv)}\n")
    progress.say(activity)
    beat = {"next": HEARTBEAT}
    verb = activity.split(" ", 1)[0].lower()

    def tick(elapsed: float) -> None:
        if elapsed >= beat["next"]:
            progress.say(f"  ... still {verb} ({elapsed:.0f}s)")
            beat["next"] = elapsed + HEARTBEAT

    lines = _Lines(log)
    res = proc.stream(argv, timeout=timeout, sink=lines, tick=tick, env=env)
    lines.flush()
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


def installer_env() -> dict[str, str]:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PYTHONIOENCODING="utf-8", PYTHONUNBUFFERED="1")
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    return env
