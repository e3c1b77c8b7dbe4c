"""A matrix file, already parsed and validated, kept as JSON in the user's cache directory.

Parsing the bundled matrix costs ~14 ms of CPU on every doctor run (importing tomllib, the TOML
parse, the semantic checks): more than a tenth of doctor's start-up. The loader keeps what
`tomllib` made of a file that passed every check, and next time reads that back (~0.5 ms)
when it is the same text, at the same path, read by the same neuron-env code.

The key is the file's whole text (compared, not hashed), its path and a fingerprint of the
code that parses and validates (version, and size + mtime of those modules), so an edited
matrix, another path or another neuron-env never gets a stale answer. Only valid matrices are
kept. The cache is best effort: a directory that cannot be written, a corrupt or foreign entry
is a miss, never an error. It lives in `$NEURON_ENV_CACHE_DIR/matrices`, else
`$XDG_CACHE_HOME/neuron-env/matrices` (default `~/.cache/neuron-env/matrices`);
`NEURON_ENV_NO_CACHE=1` turns it off.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import zlib
from pathlib import Path

FORMAT = 1
_TAG = "$toml-datetime"  # TOML dates and times, which JSON lacks: {"$toml-datetime": [kind, iso]}
_KINDS = {"datetime": dt.datetime, "date": dt.date, "time": dt.time}


def directory() -> Path | None:
    if os.environ.get("NEURON_ENV_NO_CACHE"):
        return None
    mine = os.environ.get("NEURON_ENV_CACHE_DIR")
    base = mine or os.path.join(os.environ.get("XDG_CACHE_HOME")
                                or os.path.join(os.path.expanduser("~"), ".cache"), "neuron-env")
    if not os.path.isabs(base):  # `~` unknown, or a relative directory: not a place
        return None
    return Path(base) / "matrices"


def code_fingerprint() -> list:
    """What decides the parse: neuron-env's version and the modules that parse and check."""
    from neuron_env import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    names = ["loader.py", "model.py", "semantics.py", "cache.py", "../util/versions.py"]
    out: list = [__version__, FORMAT]
    for n in names:
        try:
            st = os.stat(os.path.join(here, n))
            out.append([n, st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([n, None, None])
    return out


def _entry(source: str) -> Path | None:
    d = directory()
    if d is None:
        return None
    name = os.path.basename(source).removesuffix(".toml")
    return d / f"{name}-{zlib.crc32(source.encode()):08x}.json"


def _encode(value):
    for kind, cls in _KINDS.items():
        if isinstance(value, cls):
            return {_TAG: [kind, value.isoformat()]}
    raise TypeError(f"{type(value).__name__} is no TOML value")


def _decode(d: dict):
    if _TAG in d and len(d) == 1:
        kind, text = d[_TAG]
        return _KINDS[kind].fromisoformat(text)
    return d


def get(source: str, text: str) -> dict | None:
    """What tomllib made of `text` at `source` last time it passed every check, or None."""
    path = _entry(source)
    if path is None:
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"), object_hook=_decode)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(doc, dict) or doc.get("source") != source or doc.get("text") != text \
            or doc.get("code") != code_fingerprint() or not isinstance(doc.get("data"), dict):
        return None
    return doc["data"]


def put(source: str, text: str, data: dict) -> None:
    """Keep a valid matrix's parse (best effort: never fails the command)."""
    path = _entry(source)
    if path is None:
        return
    from neuron_env.util.atomic import write_atomic

    doc = {"source": source, "text": text, "code": code_fingerprint(), "data": data}
    with contextlib.suppress(OSError, TypeError, ValueError):
        write_atomic(path, json.dumps(doc, default=_encode))
