"""Run installer steps: bounded time, own process group, output to the log, progress lines."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from neuron_env.errors import CommandTimeout
from neuron_env.util import redact
from neuron_env.util.proc import kill_group

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


def run_step(name: str, argv: list[str], *, timeout: float, env: dict[str, str], log: Log,
             progress: Progress, activity: str) -> StepResult:
    """Run one installer command; its whole output goes to the log and comes back for errors."""
    log.write(f"\n$ {' '.join(argv)}\n")
    progress.say(activity)
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=env, start_new_session=True)
        next_beat = start + HEARTBEAT
        try:
            while True:
                try:
                    p.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if now - start > timeout:
                        kill_group(p)
                        p.wait()
                        out.seek(0)
                        log.write(out.read().decode("utf-8", "replace"))
                        log.write(f"[neuron-env] {name}: killed after {timeout:.0f}s\n")
                        raise CommandTimeout(
                            f"{name} did not finish within {timeout:.0f}s (index slow or hung?)",
                            hint="check the index URLs are reachable, or raise --timeout; "
                                 f"installer output: {log.path}") from None
                    if now >= next_beat:
                        progress.say(f"  ... still {activity.split(' ', 1)[0].lower()} "
                                     f"({now - start:.0f}s)")
                        next_beat = now + HEARTBEAT
        except BaseException:
            kill_group(p)
            p.wait()
            raise
        finally:
            kill_group(p)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    log.write(text)
    elapsed = time.monotonic() - start
    log.write(f"[neuron-env] {name}: exit {p.returncode} in {elapsed:.1f}s\n")
    return StepResult(name, tuple(argv), p.returncode, text, elapsed)


def installer_env() -> dict[str, str]:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PYTHONIOENCODING="utf-8", PYTHONUNBUFFERED="1")
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    return env
