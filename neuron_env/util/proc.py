"""Every subprocess goes through `run`: bounded time, own process group, capped output."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass

MAX_OUTPUT = 8 * 1024 * 1024


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int | None  # None: did not run or was killed at the timeout
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool = False
    error: str | None = None  # could not start: "not found", "permission denied", ...

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None

    def tail(self, n: int = 600) -> str:
        text = (self.stderr or self.stdout or "").strip()
        return text[-n:]


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class Running:
    """A started subprocess (see `spawn`); `result()` waits for it within its deadline."""

    def __init__(self, argv: list[str], timeout: float, env: dict[str, str] | None,
                 input: str | None, cwd: str | None) -> None:
        self.argv, self.input = tuple(argv), input
        self.start = time.monotonic()
        self.deadline = self.start + timeout
        self.error: str | None = None
        self.proc: subprocess.Popen | None = None
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError:
            self.error = "not found"
        except PermissionError:
            self.error = "permission denied"
        except OSError as e:
            self.error = e.strerror or str(e)

    def result(self) -> Completed:
        if self.proc is None:
            return Completed(self.argv, None, "", "", 0.0, error=self.error)
        return _finish(self.proc, self.argv, self.input, self.start, self.deadline)


def spawn(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
          input: str | None = None, cwd: str | None = None) -> Running:
    """Start argv now (own session) and collect it later: lets probes overlap."""
    return Running(argv, timeout, env, input, cwd)


def run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
        input: str | None = None, cwd: str | None = None) -> Completed:
    """Run argv in its own session; on timeout kill the whole process group."""
    return spawn(argv, timeout=timeout, env=env, input=input, cwd=cwd).result()


def _finish(proc: subprocess.Popen, argv: tuple[str, ...], input: str | None, start: float,
            deadline: float) -> Completed:
    try:
        out, err = proc.communicate(input.encode() if input is not None else None,
                                    timeout=max(0.0, deadline - time.monotonic()))
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:  # Ctrl-C: take the children down with us
        kill_group(proc)
        proc.wait()
        raise
    finally:
        kill_group(proc)  # grandchildren left behind by a finished child
    return Completed(
        argv, None if timed_out else proc.returncode,
        out[:MAX_OUTPUT].decode("utf-8", "replace"), err[:MAX_OUTPUT].decode("utf-8", "replace"),
        time.monotonic() - start, timed_out=timed_out,
    )
