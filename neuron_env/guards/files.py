"""THE reader of what someone else controls (a mounted image under --root, a matrix path,
`trial --baseline`, `trial --collect`'s rank files, fleet reports, `--ca-bundle`, HTTP bodies):
regular files only (opened O_NONBLOCK and checked on the descriptor: a FIFO or /dev/zero is
refused at once, never read), never more than a cap, symlinks resolved inside the root as
chroot would; JSON with a depth limit and no NaN/Infinity unless asked; then typed fields
(`field`). A network body has a whole-read deadline (`read_body`). Every bad input is one clear
error (errors.BadInput, exit 2; CommandTimeout, exit 4), never a hang, a MemoryError or a
traceback (docs/security.md, "One reader")."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from neuron_env.errors import BadInput, FileProblem

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
    raise FileProblem(path, f"is {_kind(st.st_mode)}, not a regular file")


def _kind(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a directory"
            if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


# -- files in a directory someone else can write (RUN_DIR on shared storage) -----------------
# THE opener for them (docs/security.md, "Shared directories"): the directory is opened once,
# O_NOFOLLOW, and judged by guards/trust on its descriptor; each file is opened relative to that
# descriptor, O_NOFOLLOW|O_NONBLOCK, regular files only, owned by this user or root. A link is
# treated like a FIFO: refused, never followed, its target never shown (#45, findings 1, 3).
def open_dir(path: str | os.PathLike, what: str) -> int:
    """A descriptor on the directory `path` (not a link), trusted by guards/trust (ours or
    root's, writable by no one else unless root's sticky /tmp); BadInput (exit 2) otherwise."""
    from neuron_env.guards.trust import why_untrusted

    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _bad(what, "no such directory") from None
    except OSError as e:
        raise _bad(what, "is a symbolic link (not followed: give the directory's real path)"
                   if os.path.islink(path) else f"cannot be opened: {e.strerror or e}") from None
    untrusted = why_untrusted(os.fstat(fd))
    if untrusted:
        os.close(fd)
        raise _bad(what, f"is not trusted: {untrusted} (other users could plant links or forged "
                         "files there; chmod go-w it, or use a directory of your own)")
    return fd


def read_at(dir_fd: int, name: str, limit: int) -> bytes:
    """The bytes of `name` in the directory `dir_fd` (open_dir): a regular file of this user
    or root, never a link, at most `limit` bytes. FileNotFoundError when absent; FileProblem
    for a link, a FIFO, a device, another user's file or a file over the cap."""
    from neuron_env.guards.trust import why_not_owner

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FileProblem(name, "is a symbolic link, not a regular file (not followed)") \
                from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(name, f"is {_kind(st.st_mode)}, not a regular file")
        why = why_not_owner(st)
        if why:
            raise FileProblem(name, f"is {why}")
        os.set_blocking(fd, True)
        data = _read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileProblem(name, f"is larger than {limit} bytes: not the file expected here")
    return data


def read_json_at(dir_fd: int, name: str, limit: int, what: str, *, finite: bool = True) -> Any:
    """read_json for a file of a shared directory (read_at): BadInput naming `what`."""
    with _as_bad_input(what):
        data = read_at(dir_fd, name, limit)
    return parse_json(data, what, finite=finite)


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


# -- the one reader of untrusted documents (issue #36): bounded, non-blocking, depth-limited,
# finite by default, then checked field by field ------------------------------------------------
MAX_DEPTH = 64  # no document neuron-env reads nests deeper than ~8


def _bad(what: str, why: str) -> BadInput:
    return BadInput(f"{what}: {why}")


_NOT_BRACKET = bytes(c for c in range(256) if c not in b'[]{}"')
_OPEN_CLOSE = bytes.maketrans(b"[{]}", b"(())")


def _depth(text: bytes, limit: int) -> int:
    """The nesting depth of a document json.loads ACCEPTED (its UTF-8 bytes), at most
    limit + 1: read from the bytes, not the parsed objects (no walk of them in Python; a few
    C-speed passes, ~5x cheaper than the walk on a doctor report). Escaped backslashes and
    quotes go first, then everything but brackets and quotes; the brackets inside strings
    (every other piece between quotes) go; then one pass per level removes the innermost
    `()` pairs."""
    if b"\\" in text:
        text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    s = b"".join(text.translate(None, _NOT_BRACKET).split(b'"')[::2]).translate(_OPEN_CLOSE)
    deepest = 0
    while s and deepest <= limit:
        inner = s.replace(b"()", b"")
        if len(inner) == len(s):  # not reached for valid JSON
            break
        s, deepest = inner, deepest + 1
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows (RFC 8259)")


def parse_json(data: bytes | str, what: str, *, depth: int = MAX_DEPTH,
               finite: bool = True) -> Any:
    """A JSON document from someone else: BadInput (exit 2) when it is not UTF-8 JSON, nests
    deeper than `depth`, or (finite=True) holds NaN/Infinity."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        doc = json.loads(text, parse_constant=None if not finite else _no_constant)
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    except RecursionError:
        raise _bad(what, f"is nested more than {depth} levels deep: not the document expected "
                         "here") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise _bad(what, f"is not valid JSON ({e})") from None
    if _depth(raw, depth) > depth:
        raise _bad(what, f"is nested more than {depth} levels deep: not the document expected "
                         "here")
    return doc


@contextlib.contextmanager
def _as_bad_input(what: str) -> Iterator[None]:
    """An untrusted file that cannot be opened or read as a regular file: BadInput naming it."""
    try:
        yield
    except FileProblem as e:
        raise _bad(what, e.why) from None
    except FileNotFoundError:
        raise _bad(what, "no such file") from None
    except OSError as e:
        raise _bad(what, f"cannot be read: {e.strerror or e}") from None


def check_regular(path: str | os.PathLike, limit: int, what: str) -> None:
    """BadInput unless `path` is a regular file of at most `limit` bytes (opened O_NONBLOCK,
    checked on the descriptor, closed: for a file another process reads, e.g. torch.load)."""
    with _as_bad_input(what):
        fd = _open_regular(path, nofollow=False)
    try:
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > limit:
        raise _bad(what, f"is larger than {limit} bytes: not the file expected here")


def read_json(path: str | os.PathLike, limit: int, what: str, *, depth: int = MAX_DEPTH,
              finite: bool = True) -> Any:
    """THE reader of an untrusted JSON file (`--baseline`, `trial --collect`'s rank files):
    a regular file (a FIFO or a device is refused at once, never read), at most `limit` bytes,
    then parse_json. Every failure is BadInput (exit 2) naming `what`."""
    with _as_bad_input(what):
        data = read_bounded(path, limit, nofollow=False)
    return parse_json(data, what, depth=depth, finite=finite)


_KINDS: dict[str, tuple[type, ...]] = {"int": (int,), "number": (int, float),
                                       "any_number": (int, float), "str": (str,),
                                       "bool": (bool,), "dict": (dict,), "list": (list,)}


def number(v: Any) -> float:
    """THE conversion of a number someone else wrote (a JSON field, an API's price string):
    a float, never an exception. A 400-digit integer is +-inf (float() raises OverflowError),
    anything that is not an int, a float or a numeric string is NaN; the caller then refuses
    what is not finite (#45, finding 10)."""
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return math.nan
    try:
        return float(v)
    except OverflowError:  # a 400-digit integer
        return math.inf if v > 0 else -math.inf  # type: ignore[operator]
    except ValueError:
        return math.nan


_as_number = number


def field(doc: Any, key: str, kind: str, what: str, *, optional: bool = False,
          lo: float | None = None, hi: float | None = None) -> Any:
    """doc[key], checked: `kind` int | number (finite) | any_number (inf allowed, not NaN) |
    str | bool | dict | list; within [lo, hi] for numbers. BadInput (exit 2) naming `what`
    and the field otherwise; None when optional and missing or null."""
    if not isinstance(doc, dict):
        raise _bad(what, f"is a JSON {type(doc).__name__}, not an object")
    v: Any = doc.get(key)
    if v is None:
        if optional:
            return None
        raise _bad(what, f"has no `{key}` ({kind} expected)")
    if not isinstance(v, _KINDS[kind]) or (kind != "bool" and isinstance(v, bool)):
        raise _bad(what, f"`{key}` is {type(v).__name__}, not {kind}")
    if kind in ("number", "any_number", "int"):
        num = _as_number(v)
        if math.isnan(num) or (kind != "any_number" and not math.isfinite(num)):
            raise _bad(what, f"`{key}` is {v}: a finite number is expected")
        if (lo is not None and num < lo) or (hi is not None and num > hi):
            raise _bad(what, f"`{key}` is {v}: expected within [{lo}, {hi}]")
    return v


# -- network bodies and CA bundles --------------------------------------------------------------
def _socket_of(resp: Any) -> Any:
    """The socket under an http.client response (urllib's), or None."""
    raw = getattr(getattr(resp, "fp", None), "raw", None)
    return getattr(raw, "_sock", None)


def read_body(resp: Any, limit: int, deadline_s: float, what: str) -> bytes:
    """THE reader of an HTTP(S) body (an http.client/urllib response): at most `limit` bytes
    and the WHOLE read within `deadline_s` seconds. A socket timeout bounds one recv only (a
    server sending a byte a second never trips it); here each recv gets only the time left,
    so a trickling server ends in CommandTimeout (exit 4) at the deadline. Over the cap:
    BadInput (exit 2)."""
    import time

    from neuron_env.errors import CommandTimeout

    end = time.monotonic() + deadline_s
    sock, size = _socket_of(resp), 0
    chunks: list[bytes] = []
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise CommandTimeout(f"{what}: the body did not arrive within {deadline_s:g} s "
                                 f"({size} bytes read)")
        if sock is not None:
            sock.settimeout(left)
        try:
            b = resp.read1(min(1 << 16, limit + 1 - size)) if hasattr(resp, "read1") \
                else resp.read(min(1 << 16, limit + 1 - size))
        except TimeoutError:
            raise CommandTimeout(f"{what}: the body did not arrive within {deadline_s:g} s "
                                 f"({size} bytes read)") from None
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        size += len(b)
        if size > limit:
            raise _bad(what, f"is larger than {limit} bytes: not the document expected here")


MAX_CA_BUNDLE = 4 * 1024 * 1024


def ssl_context(ca_bundle: str | None) -> Any:
    """An ssl.SSLContext trusting `ca_bundle` (PEM), read by THE reader (a FIFO or a device is
    refused at once: `create_default_context(cafile=FIFO)` blocked for ever), else the system's
    CAs. BadInput (exit 2) for a bundle that cannot be used."""
    import ssl

    if ca_bundle is None:
        return ssl.create_default_context()
    what = f"--ca-bundle {ca_bundle}"
    try:
        pem = read_bounded(ca_bundle, MAX_CA_BUNDLE)
    except FileProblem as e:
        raise _bad(what, e.why) from None
    except OSError as e:
        raise _bad(what, f"cannot be read: {e.strerror or e}") from None
    try:
        return ssl.create_default_context(cadata=pem.decode("ascii"))
    except (ValueError, ssl.SSLError, UnicodeDecodeError) as e:
        raise _bad(what, f"holds no usable PEM certificate ({e})") from None
