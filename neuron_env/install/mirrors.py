"""What pip will talk to besides the matrix's indexes, and how index URLs reach the installer.

- `public_indexes`: pip's own configured index and extra indexes (environment and pip.conf), so
  provenance can tell a public repository apart from the Neuron one on a shared mirror host.
- `with_mirrors`: the plan with those, and each index's explicit files prefix
  (`NEURON_ENV_<NAME>_FILES_URL`), filled in.
- `index_env`: index URLs go to pip/uv through the ENVIRONMENT, never the command line: a
  command line is readable by every user in /proc/<pid>/cmdline, credentials included.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

from neuron_env.guards.files import read_bounded
from neuron_env.install.plan import Plan
from neuron_env.matrix.model import Matrix
from neuron_env.util.record import replace

PYPI = "https://pypi.org/simple"
_MAX_CONF = 1 << 20


def _split(v: str | None) -> list[str]:
    return [u for u in (v or "").split() if u]


def _conf_files(env) -> list[Path]:
    """The files pip itself reads, in its order: global, then the user's (skipped, as pip
    does, when PIP_CONFIG_FILE names an existing file), the venv's, PIP_CONFIG_FILE."""
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    home = Path(env.get("HOME") or "~").expanduser()
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf")]
    if not (env.get("PIP_CONFIG_FILE") and os.path.exists(env["PIP_CONFIG_FILE"])):
        files += [home / ".pip/pip.conf", xdg / "pip/pip.conf"]
    if env.get("VIRTUAL_ENV"):
        files.append(Path(env["VIRTUAL_ENV"]) / "pip.conf")
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    return files


def _from_conf(path: Path) -> tuple[list[str], list[str]]:
    cp = configparser.RawConfigParser()
    try:
        cp.read_string(read_bounded(path, _MAX_CONF).decode("utf-8", "replace"))
    except (OSError, configparser.Error):
        return [], []
    idx, extra = [], []
    for sect in ("global", "install"):
        if cp.has_section(sect):
            idx += _split(cp.get(sect, "index-url", fallback=None))
            extra += _split(cp.get(sect, "extra-index-url", fallback=None))
    return idx, extra


def public_indexes(env=None) -> tuple[str, ...]:
    """Every index pip may use on its own: the effective index-url and all extra ones."""
    env = os.environ if env is None else env
    index, extra = [PYPI], []
    for f in _conf_files(env):
        i, e = _from_conf(f)
        index = i[-1:] or index
        extra += e
    index = _split(env.get("PIP_INDEX_URL"))[-1:] or index
    extra += _split(env.get("PIP_EXTRA_INDEX_URL"))
    return tuple(dict.fromkeys(index + extra))


def files_env(index_env: str | None) -> str | None:
    """NEURON_ENV_NEURON_INDEX_URL -> NEURON_ENV_NEURON_FILES_URL."""
    if not index_env or not index_env.endswith("_INDEX_URL"):
        return None
    return index_env[: -len("_INDEX_URL")] + "_FILES_URL"


def with_mirrors(plan: Plan, m: Matrix, env=None) -> Plan:
    env = os.environ if env is None else env
    indexes = []
    for i in plan.indexes:
        mi = next((x for x in m.indexes if x.name == i.name), None)
        var = files_env(mi.env if mi else None)
        indexes.append(replace(i, files=env.get(var) or None) if var else i)
    return replace(plan, indexes=tuple(indexes), public=public_indexes(env))


def index_env(index_url: str | None, extra: list[str],
              public: tuple[str, ...] | dict = ()) -> dict[str, str]:
    """Environment for a resolution, the WHOLE index set of the step (the installer's own
    configuration is cut off, steps.installer_env): PIP_INDEX_URL (only this index), or the
    plan's public indexes (`public`: pip's configuration as the plan read it, first the index)
    plus the extra ones."""
    if index_url:
        return {"PIP_INDEX_URL": index_url, "PIP_EXTRA_INDEX_URL": " ".join(extra)}
    pub = list(public) or [PYPI]
    return {"PIP_INDEX_URL": pub[0],
            "PIP_EXTRA_INDEX_URL": " ".join(dict.fromkeys([*pub[1:], *extra]))}


def auth_env(plan: Plan) -> dict[str, str]:
    """Environment that lets the final (no index) install authenticate file downloads: pip
    takes credentials from the extra index URLs that share a file's host even with --no-index;
    uv from its index URLs. Only URLs that carry credentials are passed."""
    urls = [u for u in [*(i.url for i in plan.indexes), *plan.public]
            if "@" in u.split("://", 1)[-1].split("/", 1)[0]]
    if not urls:
        return {}
    joined = " ".join(dict.fromkeys(urls))
    return {"PIP_EXTRA_INDEX_URL": joined, "UV_EXTRA_INDEX_URL": joined}
