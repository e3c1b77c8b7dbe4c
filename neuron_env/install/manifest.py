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


INDEX_FLAGS = {"neuron": "--neuron-index-url", "pytorch-cpu": "--pytorch-index-url"}


def index_overrides(m, flags: dict[str, str | None] | None = None) -> dict[str, tuple[str, str]]:
    """Index name -> (overriding URL, what set it): the flag first, then the index's
    environment variable (doctor and install read overrides only through here)."""
    out = {}
    for idx in m.indexes:
        if (flags or {}).get(idx.name):
            out[idx.name] = (flags[idx.name], INDEX_FLAGS.get(idx.name, "flag"))
        elif idx.env and os.environ.get(idx.env):
            out[idx.name] = (os.environ[idx.env], idx.env)
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

    from neuron_env.util.atomic import write_atomic

    path = path_for(prefix)
    write_atomic(path, json.dumps(redact.value(doc), indent=2, sort_keys=False) + "\n")
    return path


def unfinished(doc: dict | None) -> bool:
    """A manifest an install left behind without finishing (interrupted, killed, failed):
    the next install is a repair and must vouch for the whole installed set."""
    return bool(doc) and doc.get("status") != "complete"
