"""One install per environment at a time: an flock on `<prefix>/.neuron-env/install.lock`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time

from neuron_env.errors import CommandTimeout


class EnvLock:
    def __init__(self, directory: str, timeout: float, say=None) -> None:
        self.path = os.path.join(directory, "install.lock")
        self.timeout, self.say = timeout, say or (lambda _msg: None)
        self.fd: int | None = None

    def _holder(self) -> str:
        with contextlib.suppress(OSError, ValueError), open(self.path) as f:
            return f.read().strip() or "?"
        return "?"

    def __enter__(self) -> EnvLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        told = False
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    self.say(f"waiting for another neuron-env install into this environment "
                             f"(pid {self._holder()}, lock {self.path})")
                    told = True
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise CommandTimeout(
                        f"another neuron-env install (pid {self._holder()}) held {self.path} "
                        f"for over {self.timeout:.0f}s",
                        hint="wait for it to finish, or raise --lock-timeout") from None
                time.sleep(0.2)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
