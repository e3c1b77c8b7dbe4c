"""cache.compile: TorchNeuron's compile cache and debug directories are usable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks.driver import _image
from neuron_env.checks.registry import check, result
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.cache import CacheDir
    from neuron_env.probes.facts import HostFacts

GIB = 1 << 30
FAIL_BELOW = 1 * GIB
WARN_BELOW = 5 * GIB


def _dir_problem(c: CacheDir) -> tuple[str, str] | None:
    """(problem, fix) for one directory, or None."""
    if c.exists and not c.is_dir:
        return (f"{c.var}={c.path} is a file, not a directory",
                f"rm {c.path} or export {c.var}=<a directory>")
    if c.exists and not c.writable:
        return (f"{c.path} ({c.var}) is not writable: compilation fails writing artifacts",
                f"sudo chown -R $(id -u):$(id -g) {c.path}  (or export {c.var}=$HOME/"
                f"{c.path.rstrip('/').rsplit('/', 1)[-1]})")
    if not c.exists and not c.writable:
        return (f"{c.path} ({c.var}) does not exist and cannot be created under "
                f"{c.creatable_from} (not writable)",
                f"sudo mkdir -p {c.path} && sudo chown $(id -u):$(id -g) {c.path}")
    if c.free_bytes is not None and c.free_bytes < FAIL_BELOW:
        return (f"{c.path} has {c.free_bytes / GIB:.1f} GiB free: a compile can fill it",
                f"free space on that filesystem, or export {c.var}=<a larger disk>")
    return None


def _stale(c: CacheDir, cc_version: str | None) -> list[str]:
    if not cc_version or not c.compiler_versions:
        return []
    return [v for v in c.compiler_versions if v != cc_version.split("+")[0]]


@check("cache.compile", "cache")
def cache_compile(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """compile cache/debug directories writable, with free space."""
    if facts.cache is None:
        return result("cache.compile", "skip", "cache directories not probed")
    if _image(facts):
        return result("cache.compile", "skip",
                      "a mounted image: cache directories are checked on the running host")
    observed = {c.var: {"path": c.path, "from_env": c.from_env, "exists": c.exists,
                        "writable": c.writable, "free_gib": None if c.free_bytes is None
                        else round(c.free_bytes / GIB, 1),
                        "compiler_versions": list(c.compiler_versions),
                        "untrusted": c.untrusted} for c in facts.cache}
    docs = m.doc("compile_artifacts") or m.doc("env_vars")
    found = [p for c in facts.cache if (p := _dir_problem(c))]
    if found:
        return result("cache.compile", "fail", found[0][0] + (
            f" (+{len(found) - 1} more)" if len(found) > 1 else ""), observed=observed,
            fix=" ; ".join(f for _, f in found), docs=docs,
            details={"problems": [p for p, _ in found]})
    shared = [c for c in facts.cache if c.untrusted]
    if shared:  # guards.trust: what another user can write there runs in this process
        c = shared[0]
        return result("cache.compile", "warn",
                      f"{c.path} ({c.var}) is {c.untrusted}: another user could plant "
                      "compiled programs there that run in your process", observed=observed,
                      fix=f"export {c.var}=$HOME/.cache/neuron-compile-cache (a cache of your "
                          f"own), or make {c.path} yours: sudo chown -R $(id -u) {c.path} && "
                          f"chmod -R go-w {c.path}", docs=docs)
    cc = facts.target.dist("neuronx-cc") if facts.target.usable else None
    cc_version = cc.version if cc else None
    notes = []
    for c in facts.cache:
        if (old := _stale(c, cc_version)):
            notes.append(f"{c.path} holds artifacts of neuronx-cc {', '.join(old)} (installed: "
                         f"{cc_version}): they are never reused; remove "
                         + " ".join(f"{c.path}/neuronxcc-{v}*" for v in old))
        if c.free_bytes is not None and c.free_bytes < WARN_BELOW:
            notes.append(f"{c.path} has only {c.free_bytes / GIB:.1f} GiB free")
        if not c.from_env and not c.default_confirmed:
            notes.append(f"{c.var} unset: its default ({c.path}) is not confirmed by the docs")
    if [n for n in notes if "confirmed" not in n]:
        real = [n for n in notes if "confirmed" not in n]
        return result("cache.compile", "warn", real[0], observed=observed,
                      fix="rm -rf the stale neuronxcc-<version> directories listed; keep the "
                          "cache on a disk with room", docs=docs, details={"notes": notes})
    return result("cache.compile", "pass",
                  ", ".join(f"{c.var} {c.path}" for c in facts.cache) + " writable",
                  observed=observed, details={"notes": notes} if notes else None)
