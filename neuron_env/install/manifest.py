"""The install manifest neuron-env writes into an environment; doctor's backend.origin reads it.

Location: `<sys.prefix>/.neuron-env/install-manifest.json`, schema `neuron-env.manifest/1`:
{"schema", "tool": {name, version}, "created", "matrix": {release}, "status": "complete" |
"incomplete", "packages": [{name, version, index_url, url, sha256}]}
"""

from __future__ import annotations

import os

from neuron_env.guards import redact

RELATIVE_PATH = os.path.join(".neuron-env", "install-manifest.json")
SCHEMA = "neuron-env.manifest/1"


def path_for(prefix: str) -> str:
    return os.path.join(prefix, RELATIVE_PATH)


def write(prefix: str, doc: dict) -> str:
    """Atomically (rename) write the manifest; returns its path."""

    from neuron_env.guards.atomic import write_atomic

    path = path_for(prefix)
    from neuron_env.util.jsonout import dumps
    write_atomic(path, dumps(redact.value(doc), indent=2, sort_keys=False) + "\n")
    return path


def unfinished(doc: dict | None) -> bool:
    """A manifest an install left behind without finishing (interrupted, killed, failed):
    the next install is a repair and must vouch for the whole installed set."""
    return doc is not None and bool(doc) and doc.get("status") != "complete"
