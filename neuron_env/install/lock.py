"""One install per environment at a time: an flock on `<prefix>/.neuron-env/install.lock`.

The environment's directory belongs to its owner, and neuron-env often runs as root: every path
in it is opened without following a symlink (O_NOFOLLOW) and checked on the opened descriptor
(a regular file with one link), so root never truncates a file the owner pointed it to
(docs/security.md, "Writing files")."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time

from neuron_env.errors import CommandTimeout, ConfigurationError

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _not_a_link(path: str, what: str) -> None:
    """Refuse `path` when it is a symbolic link (or not a directory, for a directory)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise ConfigurationError(
            f"{path} is a symbolic link (to {os.path.realpath(path)}): neuron-env does not "
            f"follow links inside the environment for its {what}",
            hint=f"remove the link (rm {path}) and run again") from None


def state_dir(prefix: str) -> str:
    """`<prefix>/.neuron-env` (and its logs/), created 0755 whatever the umask, neither a
    symlink; writability proven with a temporary file created exclusively. A read-only
    environment is refused here, untouched, with the real cause."""
    from neuron_env.guards.atomic import safe_umask, temp_file

    d = os.path.join(prefix, ".neuron-env")
    logs = os.path.join(d, "logs")
    _not_a_link(d, "state directory")
    try:
        with safe_umask():
            os.makedirs(logs, exist_ok=True)
        _not_a_link(logs, "log directory")
        fd, probe = temp_file(d, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ConfigurationError(
            f"the environment {prefix} is not writable ({_why(e)})",
            hint="install into a writable environment: --venv DIR, or run as its owner") from None
    return d


def _why(e: OSError) -> str:
    if e.errno == errno.EROFS:
        return "it is on a read-only file system"
    return e.strerror or str(e)


def open_new(path: str, mode: int = 0o644) -> int:
    """A new file for writing (a log): created exclusively, never through a symlink."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)


class EnvLock:
    def __init__(self, directory: str, timeout: float, say=None) -> None:
        self.directory = directory
        self.path = os.path.join(directory, "install.lock")
        self.timeout, self.say = timeout, say or (lambda _msg: None)
        self.fd: int | None = None

    def _holder(self) -> str:
        from neuron_env.guards.files import read_bounded

        with contextlib.suppress(OSError, ValueError):
            return read_bounded(self.path, 64, nofollow=True).decode().strip() or "?"
        return "?"

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW, 0o644)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise ConfigurationError(
                f"{self.path} is a symbolic link: neuron-env does not follow it",
                hint=f"remove the link (rm {self.path}) and run again") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise ConfigurationError(
                f"{self.path} is not a plain file (a FIFO, a device or a hard link to another "
                "file): neuron-env does not write it",
                hint=f"remove it (rm {self.path}) and run again")
        os.set_blocking(fd, True)
        return fd

    def __enter__(self) -> EnvLock:
        self.fd = self._open()
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
