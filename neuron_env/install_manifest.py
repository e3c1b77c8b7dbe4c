"""The install manifest neuron-env writes into an environment; doctor's backend.origin reads it.

Location: `<sys.prefix>/.neuron-env/install-manifest.json`, schema `neuron-env.manifest/1`:
{"schema", "tool": {name, version}, "created", "matrix": {release}, "status": "complete" |
"incomplete", "packages": [{name, version, index_url, url, sha256}]}
"""

from __future__ import annotations

import os

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
