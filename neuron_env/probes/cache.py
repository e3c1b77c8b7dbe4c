"""The TorchNeuron compile cache and debug directories: where, writable, free space, contents."""

from __future__ import annotations

import os
import re
import shutil

from neuron_env.guards.trust import why_untrusted_path
from neuron_env.probes.host import Root
from neuron_env.util.record import record

# (variable, default, default confirmed by the env-vars / compiler-artifacts pages)
CACHE_VARS = (
    ("TORCH_NEURONX_DEBUG_DIR", "/tmp/neuron_backend", True),
    ("TORCH_NEURONX_NEFF_CACHE_DIR", "/var/tmp/neuron-compile-cache", False),
)
COMPILE_CACHES = ("TORCH_NEURONX_NEFF_CACHE_DIR", "NEURON_COMPILE_CACHE_URL")
_COMPILER_DIR = re.compile(r"^neuronxcc-([0-9][0-9A-Za-z.]*)(?:\+.*)?$")


@record
class CacheDir:
    var: str
    path: str
    from_env: bool
    default_confirmed: bool = True
    exists: bool = False
    is_dir: bool = False
    writable: bool = False  # the directory, or (when absent) the nearest existing parent
    creatable_from: str | None = None  # the existing parent it would be created under
    free_bytes: int | None = None
    compiler_versions: tuple[str, ...] = ()  # neuronxcc-<version> entries inside
    untrusted: str | None = None  # a compile cache failing guards.trust: why (None: trusted)


def _nearest_parent(p):
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _inspect(root: Root, var: str, path: str, from_env: bool, confirmed: bool) -> CacheDir:
    if not path.startswith("/"):
        path = os.path.abspath(path)
    f = root.file(path.lstrip("/"))
    exists, is_dir = f.exists(), f.is_dir()
    base = f if exists else _nearest_parent(f)
    writable = base.is_dir() and os.access(base, os.W_OK | os.X_OK)
    try:
        free = shutil.disk_usage(base).free
    except OSError:
        free = None
    versions: tuple[str, ...] = ()
    if is_dir:
        try:
            versions = tuple(sorted({m.group(1) for e in f.iterdir()
                                     if (m := _COMPILER_DIR.match(e.name))}))
        except OSError:
            versions = ()
    parent = None if exists else "/" + str(base.relative_to(root.path)).lstrip(".")
    # the compiled programs in a compile cache run in the process: the owner rule applies
    # (the debug directory only receives output)
    untrusted = (why_untrusted_path(f, kind="dir") if exists and var in COMPILE_CACHES
                 else None)
    return CacheDir(var, path, from_env, confirmed, exists, is_dir, writable, parent, free,
                    versions, untrusted)


def probe_cache(root: Root, env: dict[str, str]) -> tuple[CacheDir, ...]:
    out = []
    for var, default, confirmed in CACHE_VARS:
        val = env.get(var)
        out.append(_inspect(root, var, val or default, bool(val), confirmed))
    url = env.get("NEURON_COMPILE_CACHE_URL")
    if url and not re.match(r"^[a-z0-9]+://", url):  # a local path (s3:// is not probed)
        out.append(_inspect(root, "NEURON_COMPILE_CACHE_URL", url, True, True))
    return tuple(out)
