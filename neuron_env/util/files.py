"""Reading files that someone else controls (a mounted image under --root, a matrix path):
regular files only, never more than a cap, symlinks resolved inside the root as chroot would.
A FIFO, /dev/zero or a 10 GB file becomes a clear problem, never a hang or a MemoryError."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from neuron_env.errors import FileProblem

MAX_LINKS = 40  # as the kernel's ELOOP


def _open_regular(path: str | os.PathLike, nofollow: bool) -> int:
    """An fd on a regular file, or FileProblem. O_NONBLOCK: opening a FIFO neither waits for a
    writer nor blocks."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
    fd = os.open(path, flags)
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode):
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a directory"
            if stat.S_ISDIR(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
            else "not a regular file")
    raise FileProblem(path, f"is {kind}, not a regular file")


def _read(fd: int, n: int) -> bytes:
    chunks, size = [], 0
    while size < n:
        b = os.read(fd, min(1 << 16, n - size))
        if not b:
            break
        chunks.append(b)
        size += len(b)
    return b"".join(chunks)


def read_bounded(path: str | os.PathLike, limit: int, *, nofollow: bool = False) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. OSError when it cannot be read
    (FileNotFoundError as usual); FileProblem for something that is not a regular file or is
    larger than the cap."""
    fd = _open_regular(path, nofollow)
    try:
        data = _read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileProblem(path, f"is larger than {limit} bytes: not the file expected here")
    return data


def read_head(path: str | os.PathLike, n: int, *, nofollow: bool = False) -> bytes:
    """The first n bytes of a regular file (FileProblem for anything else)."""
    fd = _open_regular(path, nofollow)
    try:
        return _read(fd, n)
    finally:
        os.close(fd)


def resolve_in_root(root: Path, rel: str) -> Path:
    """root/rel with every symlink resolved INSIDE root: an absolute target starts again at
    root, '..' never climbs above it (as chroot(2) would). Missing parts are kept as they are."""
    parts = [p for p in rel.split("/") if p and p != "."]
    cur: list[str] = []
    links = 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            if cur:
                cur.pop()
            continue
        here = root.joinpath(*cur, name)
        try:
            target = os.readlink(here)
        except OSError:  # not a link (or not there): keep the name
            cur.append(name)
            continue
        links += 1
        if links > MAX_LINKS:
            raise FileProblem(root.joinpath(*cur, name), "has too many levels of symbolic links")
        if target.startswith("/"):
            cur = []
        parts = [p for p in target.split("/") if p and p != "."] + parts
    return root.joinpath(*cur)
