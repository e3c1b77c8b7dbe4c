"""The one atomic writer and the one temporary-file maker (docs/security.md, "Writing files").

- `temp_file`: every temporary file neuron-env makes: a random name, created exclusively
  (O_CREAT|O_EXCL|O_NOFOLLOW), mode 0600 until it is complete: a name planted in advance (a
  symlink in a world-writable directory) makes the create fail, never redirects the write.
- `write_atomic`: our own files (manifest, matrix cache, matrix import): written next to the
  target under a temporary name and renamed into place, so a reader never sees half a file;
  mode 0644 by default whatever the umask (they hold no secret). A symlink at the path is
  replaced (rename never follows it), never written through.
- `write_output`: a path the user named (`--report FORMAT:PATH`, `bundle --out`): a character
  device or FIFO (`/dev/null`, `/dev/stdout`, a pipe) is written THROUGH, never replaced; a
  symlink to a regular file is refused (`RefusedPath`): neuron-env, often root, never follows a
  link into another owner's file nor silently replaces a link the admin made.
- `safe_umask`: the umask made at least 022 while neuron-env (and the installers it starts,
  which inherit it) create files.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

FILE_MODE = 0o644
_FD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}


class RefusedPath(OSError):
    """A path neuron-env will not write: `str()` says why, for the user."""

    def __init__(self, path: str | os.PathLike, why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path, self.why = str(path), why


@contextlib.contextmanager
def safe_umask() -> Iterator[None]:
    """The process umask at least 022 (group and others never get write) for the block."""
    old = os.umask(0o022)
    os.umask(old | 0o022)
    try:
        yield
    finally:
        os.umask(old)


def _random_name() -> str:
    """16 hex digits from the kernel's CSPRNG (`secrets` would import hashlib: ~3 ms a run)."""
    return os.urandom(8).hex()


def temp_file(directory: str | os.PathLike, prefix: str = ".neuron-env-",
              suffix: str = ".tmp") -> tuple[int, str]:
    """(fd, path) of a new, empty file in `directory`: a random name, created exclusively
    without following a symlink, mode 0600, close-on-exec. The caller renames or unlinks it."""
    for _ in range(100):
        path = os.path.join(os.fspath(directory), f"{prefix}{_random_name()}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        return fd, path
    raise FileExistsError(f"no free temporary name in {directory}")


def _data(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_atomic(path: Path | str, content: str | bytes, mode: int | None = FILE_MODE,
                 owner: tuple[int, int] | None = None) -> None:
    """Write `content` to `path` through a temporary file renamed into place. mode None: keep
    the mode of the file it replaces (0644 when new); owner: (uid, gid) to give it (as root,
    rewriting another user's file in place of theirs)."""
    path = Path(path)
    with safe_umask():
        path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            mode = FILE_MODE
    fd, tmp = temp_file(path.parent, prefix=f".{path.name}.")
    try:
        try:
            _write_all(fd, _data(content))
            os.fchmod(fd, mode)
            if owner is not None:
                os.fchown(fd, *owner)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fd_of(path: str) -> int | None:
    """The descriptor `/dev/stdout`, `/dev/fd/N` or `/proc/self/fd/N` names, else None."""
    if path in _FD_PATHS:
        return _FD_PATHS[path]
    for head in ("/dev/fd/", "/proc/self/fd/"):
        if path.startswith(head) and path[len(head):].isdigit():
            return int(path[len(head):])
    return None


def _through(path: str, data: bytes) -> None:
    """Write into an existing character device or FIFO (no create, no truncate)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)  # what was opened, not what the name pointed to a moment before
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise RefusedPath(path, "changed while it was opened; not written")
        os.set_blocking(fd, True)
        _write_all(fd, data)
    finally:
        os.close(fd)


def write_output(path: Path | str, content: str | bytes, mode: int = FILE_MODE) -> None:
    """A file the user named: devices and FIFOs written through, regular files replaced
    atomically (mode 0644), a symlink to anything else refused (RefusedPath)."""
    data, name = _data(content), os.fspath(path)
    fd = _fd_of(os.path.normpath(name) if name.startswith("/") else name)
    if fd is not None:  # our own stdout/stderr: whatever it is (tty, pipe, a file), write to it
        import sys

        for f in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                f.flush()
        _write_all(fd, data)
        return
    try:
        lst = os.lstat(name)
    except FileNotFoundError:
        write_atomic(name, data, mode)
        return
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = os.stat(name)
        except OSError:
            raise RefusedPath(name, "is a dangling symbolic link; give the real path") from None
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            _through(name, data)
            return
        raise RefusedPath(name, f"is a symbolic link (to {os.path.realpath(name)}); neuron-env "
                                "does not write through links: give the real path")
    if stat.S_ISCHR(lst.st_mode) or stat.S_ISFIFO(lst.st_mode):
        _through(name, data)
    elif stat.S_ISREG(lst.st_mode):
        write_atomic(name, data, mode)
    else:
        raise RefusedPath(name, "is not a regular file, a character device or a FIFO")
