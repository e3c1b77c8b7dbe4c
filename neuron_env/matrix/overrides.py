"""Index overrides: which index a flag or an environment variable points elsewhere (a mirror),
and the URLs a package may then come from. Doctor (backend.origin) and install both read
overrides only through here."""

from __future__ import annotations

import os

from neuron_env.matrix.model import Matrix

INDEX_FLAGS = {"neuron": "--neuron-index-url", "pytorch-cpu": "--pytorch-index-url"}


def index_overrides(m: Matrix, flags: dict[str, str | None] | None = None
                    ) -> dict[str, tuple[str, str]]:
    """Index name -> (overriding URL, what set it): the flag first, then the index's
    environment variable (doctor and install read overrides only through here)."""
    out: dict[str, tuple[str, str]] = {}
    for idx in m.indexes:
        if (url := (flags or {}).get(idx.name)):
            out[idx.name] = (url, INDEX_FLAGS.get(idx.name, "flag"))
        elif idx.env and os.environ.get(idx.env):
            out[idx.name] = (os.environ[idx.env], idx.env)
    return out


def expected_index_urls(m: Matrix, overrides: dict[str, str] | None = None
                        ) -> dict[str, list[str]]:
    out = {}
    for idx in m.indexes:
        out[idx.name] = [idx.url] + ([overrides[idx.name]] if overrides and
                                     overrides.get(idx.name) else [])
    return out
