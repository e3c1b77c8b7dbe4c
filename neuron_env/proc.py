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


def run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
        input: str | None = None, cwd: str | None = None) -> Completed:
    """Run argv in its own session; on timeout kill the whole process group."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError:
        return Completed(tuple(argv), None, "", "", 0.0, error="not found")
    except PermissionError:
        return Completed(tuple(argv), None, "", "", 0.0, error="permission denied")
    except OSError as e:
        return Completed(tuple(argv), None, "", "", 0.0, error=e.strerror or str(e))
    try:
        out, err = proc.communicate(input.encode() if input is not None else None,
                                    timeout=timeout)
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
        tuple(argv), None if timed_out else proc.returncode,
        out[:MAX_OUTPUT].decode("utf-8", "replace"), err[:MAX_OUTPUT].decode("utf-8", "replace"),
        time.monotonic() - start, timed_out=timed_out,
    )
