"""The one atomic writer and the one temporary-file maker (docs/security.md, "Writing files").

- `temp_file`: every temporary file neuron-env makes: a random name, created exclusively
  (O_CREAT|O_EXCL|O_NOFOLLOW), mode 0600 until it is complete: a name planted in advance (a
  symlink in a world-writable directory) makes the create fail, never redirects the write.
- `write_atomic`: our own files (manifest, matrix cache, matrix import): written next to the
  target under a temporary name and renamed into place, so a reader never sees half a file;
  mode 0644 by default whatever the umask (they hold no secret). A symlink at the path is
  replaced (rename never follows it), never written through.
- `write_output` / `output_file` / `check_output`: THE writer of every path a user names
  (`--report FORMAT:PATH`, `trial --save-baseline`, `bundle --out`, `matrix import --out`; the
  CLI checks each such option with `cli/app.output_path` while parsing, and
  tests/unit/test_one_writer.py walks the typer app to prove it). A device (`/dev/null`), a
  FIFO, a socket, a directory or a symbolic link is refused (`errors.RefusedPath`, exit 2) and
  left untouched; a regular file (or a new name) gets a temporary file in the same directory,
  renamed over it (rename never follows a link), with the mode the caller asked for. The only
  exception: the names of our own descriptors (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
  `/proc/self/fd/N`), written to that descriptor.
- `write_all`: several files into one directory, all or none (`matrix import --out`).
- `safe_umask`: the umask made at least 022 while neuron-env (and the installers it starts,
  which inherit it) create files.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from neuron_env.errors import RefusedPath

FILE_MODE = 0o644
_FD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}
MAX_FD_DIGITS = 9  # a descriptor number is an int below 2**31: more digits name no descriptor




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
        n = path[len(head):] if path.startswith(head) else ""
        # ASCII digits only (str.isdigit accepts "²", which int() refuses), and bounded
        if n.isascii() and n.isdigit() and len(n) <= MAX_FD_DIGITS:
            return int(n)
    return None


def own_descriptor(path: str | os.PathLike) -> int | None:
    """The descriptor of ours a user-named path means (`/dev/stdout`...), else None."""
    name = os.fspath(path)
    return _fd_of(os.path.normpath(name) if name.startswith("/") else name)


def _kind(mode: int) -> str | None:
    """Why a file of this mode is not written (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    return ("is a FIFO" if stat.S_ISFIFO(mode) else "is a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "is a socket"
            if stat.S_ISSOCK(mode) else "is a directory" if stat.S_ISDIR(mode)
            else "is not a regular file")


def check_output(path: str | os.PathLike) -> None:
    """RefusedPath unless `path` is a new name, a regular file (not a link) or one of our own
    descriptors. Never opens, never follows a link (lstat)."""
    if own_descriptor(path) is not None:
        return
    name = os.fspath(path)
    name = os.path.normpath(name) if name.startswith("/") else name
    if name.startswith(("/dev/fd/", "/proc/self/fd/")):  # `/dev/fd/²`, 20 digits: no fd
        raise RefusedPath(path, "names no descriptor (a number below 2**31 is expected): "
                                "give /dev/fd/N with N an open descriptor, or a file's path")
    try:
        lst = os.lstat(path)
    except OSError:  # not there (or its directory is not): the write itself says why
        return
    why = _kind(lst.st_mode)
    if why is None:
        return
    if stat.S_ISLNK(lst.st_mode):
        why += f" (to {os.readlink(os.fspath(path))}); neuron-env never writes through links"
    raise RefusedPath(path, f"{why}, not a regular file: neuron-env does not write to it; "
                            "give the path of a regular file")


class PendingOutput:
    """A temporary file next to a user-named `path` (random name, exclusive, never through a
    link, 0600), for content written elsewhere (the target interpreter's torch.save opens
    `tmp` by name without O_CREAT). `commit()` checks the target again and renames the file
    over it with `mode`; `discard()` removes it."""

    def __init__(self, path: Path | str, mode: int = FILE_MODE) -> None:
        check_output(path)
        self.path, self.mode = Path(path), mode
        try:
            with safe_umask():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd, self.tmp = temp_file(self.path.parent, prefix=f".{self.path.name}.")
        except RefusedPath:
            raise
        except OSError as e:  # a read-only or missing directory: exit 2, said plainly
            raise RefusedPath(path, f"cannot be written: {e.strerror or e}") from None

    def commit(self) -> None:
        try:
            if self.fd < 0:  # written by another process: reopen OUR file, never a link
                self.fd = os.open(self.tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                raise RefusedPath(self.tmp, "was replaced while it was written")
            os.fchmod(self.fd, self.mode)
            self._close()
            check_output(self.path)
            os.replace(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise

    def release(self) -> str:
        """Close our descriptor (another process writes the file by name): its path."""
        self._close()
        return self.tmp

    def discard(self) -> None:
        self._close()
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@contextlib.contextmanager
def output_file(path: Path | str, mode: int = FILE_MODE) -> Iterator[int]:
    """The descriptor of a PendingOutput: committed on a clean exit, discarded on an error."""
    out = PendingOutput(path, mode)
    try:
        yield out.fd
    except BaseException:
        out.discard()
        raise
    out.commit()


def write_output(path: Path | str, content: str | bytes | Iterable[str],
                 mode: int = FILE_MODE) -> None:
    """THE writer of a path the user named: one of our own descriptors (`/dev/stdout`...) is
    written to; a new name or a regular file is replaced atomically with `mode`; anything else
    (device, FIFO, socket, directory, symbolic link) is refused (RefusedPath, exit 2),
    untouched. `content` may be pieces (a fleet's JSON): each is written as it comes; the file
    is renamed into place only after the last, so an error while they are made (or written)
    leaves the path as it was: whole or not at all."""
    parts = [content] if isinstance(content, str | bytes) else content
    fd = own_descriptor(path)
    if fd is not None:  # our own stdout/stderr: whatever it is (tty, pipe, a file), write to it
        import sys

        for f in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                f.flush()
        for part in parts:
            _write_all(fd, _data(part))
        return
    try:
        with output_file(path, mode) as out:
            for part in parts:
                _write_all(out, _data(part))
    except RefusedPath:
        raise
    except OSError as e:  # a full disk, a read-only file system: exit 2, said plainly
        raise RefusedPath(path, f"cannot be written: {e.strerror or e}") from None


def write_all(out_dir: Path, files: Iterable[tuple[str, str | bytes]], flag: str) -> None:
    """All of `files` (name, content) into `out_dir`, or none: each target is checked (absent,
    or a regular file or a link, which the rename replaces and never follows), the files are
    written into a private temporary directory there, then renamed into place. Any problem is
    a ConfigurationError naming `flag`, with nothing written."""
    import shutil
    import tempfile

    from neuron_env.errors import ConfigurationError

    files = list(files)
    hint = "pick a directory you can write"
    try:
        with safe_umask():
            out_dir.mkdir(parents=True, exist_ok=True)
        for name, _ in files:
            try:
                st = os.lstat(out_dir / name)
            except FileNotFoundError:
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                raise ConfigurationError(f"{out_dir / name} is there and is not a file: "
                                         "nothing written",
                                         hint=f"move it away, or pick another {flag}")
        stage = Path(tempfile.mkdtemp(prefix=".neuron-env-stage-", dir=out_dir))
    except OSError as e:
        raise ConfigurationError(f"{flag} {out_dir}: cannot be written: {e.strerror or e}",
                                 hint=hint) from None
    try:
        for name, text in files:
            write_atomic(stage / name, text)
        for name, _ in files:
            os.replace(stage / name, out_dir / name)
    except OSError as e:
        raise ConfigurationError(f"{flag} {out_dir}: cannot be written: {e.strerror or e}",
                                 hint=hint) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
