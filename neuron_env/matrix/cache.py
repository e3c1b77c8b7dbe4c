"""A matrix file, already parsed and validated, kept as JSON in the user's cache directory.

Parsing the bundled matrix costs ~14 ms of CPU on every doctor run (importing tomllib, the TOML
parse, the semantic checks): more than a tenth of doctor's start-up. The loader keeps what
`tomllib` made of a file that passed every check, and next time reads that back (~0.5 ms)
when it is the same text, at the same path, read by the same neuron-env code.

The key is the SHA-256 of the file's text (in the entry's name, and checked against the text
read now), its path and a fingerprint of the code that parses and validates (version, and
size + mtime of those modules), so an edited matrix, another path or another neuron-env never
gets a stale answer. Only valid matrices are kept. The cache is best effort: a directory that
cannot be written, a corrupt or foreign entry is a miss, never an error. It lives in
`$NEURON_ENV_CACHE_DIR/matrices`, else `$XDG_CACHE_HOME/neuron-env/matrices` (default
`~/.cache/neuron-env/matrices`); `NEURON_ENV_NO_CACHE=1` turns it off.

Trust (docs/security.md, "Matrix cache"): the directories it creates are 0700 whatever the
umask (0755 for root under $NEURON_ENV_CACHE_DIR, a system cache others may read); an entry is
read only when it is a regular file (not a symlink) owned by the current user or root and not
writable by group or others; anything else is ignored with a warning on stderr, since anyone
able to write an entry chooses the index `install` uses.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

FORMAT = 1
_TAG = "$toml-datetime"  # TOML dates and times, which JSON lacks: {"$toml-datetime": [kind, iso]}
_KINDS: dict[str, type[dt.date] | type[dt.time]] = {
    "datetime": dt.datetime, "date": dt.date, "time": dt.time}


def directory() -> Path | None:
    if os.environ.get("NEURON_ENV_NO_CACHE"):
        return None
    mine = os.environ.get("NEURON_ENV_CACHE_DIR")
    base = mine or os.path.join(os.environ.get("XDG_CACHE_HOME")
                                or os.path.join(os.path.expanduser("~"), ".cache"), "neuron-env")
    if not os.path.isabs(base):  # `~` unknown, or a relative directory: not a place
        return None
    return Path(base) / "matrices"


def code_fingerprint() -> list[object]:
    """What decides the parse: neuron-env's version and the modules that parse and check."""
    from neuron_env import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    names = ["loader.py", "model.py", "semantics.py", "cache.py", "../util/versions.py"]
    out: list[object] = [__version__, FORMAT]
    for n in names:
        try:
            st = os.stat(os.path.join(here, n))
            out.append([n, st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([n, None, None])
    return out


def _sha256() -> Any:
    """sha256 from the interpreter's builtin module: `hashlib` loads OpenSSL (~3 ms on every
    doctor run, tests/integration/test_doctor_inprocess.py)."""
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.10, 3.11
        except ImportError:  # pragma: no cover - a build without them
            from hashlib import sha256
    return sha256


def _sha(text: str) -> str:
    return str(_sha256()(text.encode("utf-8", "surrogatepass")).hexdigest())


def _entry(source: str, text: str) -> Path | None:
    d = directory()
    if d is None:
        return None
    name = os.path.basename(source).removesuffix(".toml")
    where = _sha(source)[:8]
    return d / f"{name}-{where}-{_sha(text)[:32]}.json"


def _warn(path: Path, why: str) -> None:
    sys.stderr.write(f"neuron-env: warning: ignoring the matrix cache entry {path}: {why}\n")


def _read_trusted(path: Path) -> str | None:
    """The entry's text when it is ours: a regular file (never through a symlink) that passes
    guards.trust (owned by this user or root, writable by no one else). Else None (a warning
    when it is there)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        _warn(path, "a symbolic link" if e.errno == errno.ELOOP else e.strerror or str(e))
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _warn(path, "not a regular file")
            return None
        from neuron_env.guards.trust import why_untrusted

        if (why := why_untrusted(st)) is not None:
            _warn(path, why)
            return None
        os.set_blocking(fd, True)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8")
    finally:
        os.close(fd)


def _mkdirs(d: Path) -> None:
    """The cache directories, 0700 (0755: root's system cache) whatever the umask."""
    mode = 0o755 if os.geteuid() == 0 and os.environ.get("NEURON_ENV_CACHE_DIR") else 0o700
    todo = []
    p = d
    while not p.exists():
        todo.append(p)
        p = p.parent
    for p in reversed(todo):
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, mode)
        os.chmod(p, mode)  # the umask may have taken bits away, never added: set them exactly


def _encode(value: object) -> dict[str, list[str]]:
    for kind, cls in _KINDS.items():
        if isinstance(value, cls):
            return {_TAG: [kind, value.isoformat()]}
    raise TypeError(f"{type(value).__name__} is no TOML value")


def _decode(d: dict[str, Any]) -> dt.date | dt.time | dict[str, Any]:
    if _TAG in d and len(d) == 1:
        kind, text = d[_TAG]
        return _KINDS[kind].fromisoformat(text)
    return d


def get(source: str, text: str) -> dict[str, Any] | None:
    """What tomllib made of `text` at `source` last time it passed every check, or None."""
    path = _entry(source, text)
    if path is None:
        return None
    try:
        raw = _read_trusted(path)
        if raw is None:
            return None
        doc = json.loads(raw, object_hook=_decode)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(doc, dict) or doc.get("source") != source \
            or doc.get("sha256") != _sha(text) or doc.get("code") != code_fingerprint() \
            or not isinstance(doc.get("data"), dict):
        return None
    data: dict[str, Any] = doc["data"]
    return data


def put(source: str, text: str, data: dict[str, Any]) -> None:
    """Keep a valid matrix's parse (best effort: never fails the command)."""
    path = _entry(source, text)
    if path is None:
        return
    from neuron_env.guards.atomic import write_atomic

    doc = {"source": source, "sha256": _sha(text), "code": code_fingerprint(), "data": data}
    with contextlib.suppress(OSError, TypeError, ValueError):
        _mkdirs(path.parent)
        write_atomic(path, json.dumps(doc, default=_encode), mode=0o644)
