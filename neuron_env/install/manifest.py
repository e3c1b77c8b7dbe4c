"""The install manifest neuron-env writes into an environment; doctor's backend.origin reads it.

Location: `<sys.prefix>/.neuron-env/install-manifest.json`, schema `neuron-env.manifest/1`:
{"schema", "tool": {name, version}, "created", "matrix": {release}, "status": "complete" |
"incomplete", "packages": [{name, version, index_url, url, sha256}]}
"""

from __future__ import annotations

import os

from neuron_env.util import redact

RELATIVE_PATH = os.path.join(".neuron-env", "install-manifest.json")
SCHEMA = "neuron-env.manifest/1"


def index_overrides(m, flags: dict[str, str | None] | None = None) -> dict[str, str]:
    """Index name -> overriding URL, from flags first, then each index's environment variable."""
    out = {}
    for idx in m.indexes:
        url = (flags or {}).get(idx.name) or (os.environ.get(idx.env) if idx.env else None)
        if url:
            out[idx.name] = url
    return out


def expected_index_urls(m, overrides: dict[str, str] | None = None) -> dict[str, list[str]]:
    out = {}
    for idx in m.indexes:
        out[idx.name] = [idx.url] + ([overrides[idx.name]] if overrides and
                                     overrides.get(idx.name) else [])
    return out


def path_for(prefix: str) -> str:
    return os.path.join(prefix, RELATIVE_PATH)


def write(prefix: str, doc: dict) -> str:
    """Atomically (rename) write the manifest; returns its path."""
    import json
    import tempfile

    path = path_for(prefix)
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".manifest-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(redact.value(doc), f, indent=2, sort_keys=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def unfinished(doc: dict | None) -> bool:
    """A manifest an install left behind without finishing (interrupted, killed, failed):
    the next install is a repair and must vouch for the whole installed set."""
    return bool(doc) and doc.get("status") != "complete"
