"""The emulator's one opener and writer of files (stdlib only: the emulator never imports
neuron_env). A directory someone else could write (the debug directory: TORCH_NEURONX_DEBUG_DIR,
by default /tmp/neuron_backend, a predictable name in a world-writable place) is created 0700
or, when it is there already, used only when it is a real directory of this user (or root)
that no one else can write; otherwise nothing is written there (a warning says why). Every
file is created O_CREAT|O_EXCL|O_NOFOLLOW under a random name in a directory opened by
descriptor, then renamed over its name: a planted link is replaced, never written through
(neuron-env issue #45, finding 2; the same rules as neuron-env's guards/trust and guards/atomic)."""

from __future__ import annotations

import contextlib
import os
import stat


class Untrusted(Exception):
    """A directory that must not be written to: str() says which and why."""


def why_untrusted(st: os.stat_result) -> str | None:
    """Why a directory with this fstat is not ours to write in, or None."""
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return f"owned by uid {st.st_uid}, not by this user (uid {me}) or root"
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid == 0 and me != 0:
        return "owned by root: not this user's own directory"
    if mode & 0o022:
        return f"writable by group or others (mode {mode:o})"
    return None


def _open_dir(name: str, dir_fd: int | None = None) -> int:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as e:
        raise Untrusted(f"{name}: cannot be opened as a directory ({e.strerror or e}; a "
                        "symbolic link is not followed)") from None
    why = why_untrusted(os.fstat(fd))
    if why:
        os.close(fd)
        raise Untrusted(f"{name} is not a private directory: {why}")
    return fd


def private_dir(path: str) -> int:
    """A descriptor on the directory `path`, made 0700 when missing (its parents as
    os.makedirs makes them), or Untrusted."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        raise Untrusted(f"{path}: cannot be created ({e.strerror or e})") from None
    return _open_dir(path)


def sub_dir(dir_fd: int, name: str) -> int:
    """`name` in dir_fd, made 0700 when missing; a descriptor on it, or Untrusted."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    return _open_dir(name, dir_fd)


def write_file(dir_fd: int, name: str, text: str) -> None:
    """`text` at `name` in dir_fd, whole or not at all (temp-and-rename, never through a
    link)."""
    for _ in range(100):
        tmp = f".{name}.{os.urandom(8).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name for {name}")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
