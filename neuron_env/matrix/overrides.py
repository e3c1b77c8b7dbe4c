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


def refuse_plain_http(m: Matrix, overrides: dict[str, tuple[str, str]]) -> None:
    """A matrix that is not the bundled one (the user's matrix directory, --matrix FILE) may
    not send `install` to a plain-http index on its own: anyone on the path would choose the
    wheels. Such an index must be passed explicitly (its flag or environment variable);
    ConfigurationError (exit 2) otherwise. Bundled matrices name https indexes only."""
    from neuron_env.errors import ConfigurationError

    if m.bundled:
        return
    bad = [i for i in m.indexes if i.name not in overrides
           and i.url.lower().startswith("http://")]
    if bad:
        i = bad[0]
        how = INDEX_FLAGS.get(i.name) or (f"${i.env}" if i.env else "an explicit index flag")
        raise ConfigurationError(
            f"the matrix {m.source} (not bundled) names a plain-http index for {i.name}: "
            f"{i.url}: refused (whoever is on the path would choose the wheels)",
            hint=f"pass the index explicitly if you trust it ({how} URL"
                 + (f" or ${i.env}" if i.env and how != f"${i.env}" else "")
                 + "), or use a matrix whose indexes are https")
