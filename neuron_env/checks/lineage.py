"""backend.lineage (native vs XLA-based torch-neuronx) and backend.collectives (the apt library)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from neuron_env.checks.backend import install_cmd
from neuron_env.checks.driver import _not_neuron_host, base_version, minor
from neuron_env.checks.registry import check, result
from neuron_env.matrix.model import fmt_spec
from neuron_env.report.model import Result
from neuron_env.util.versions import Ver

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts

XLA_DISTS = ("torch-xla", "libneuronxla", "torch-neuronx-xla")


def xla_era(version: str) -> bool | None:
    """True for `<torch>.<neuron>` versions (2.9.0.2.15.32035), False for native (2.14.3.0.*)."""
    try:
        rel = Ver(version).release
    except ValueError:
        return None
    if len(rel) >= 4 and rel[2] == 3 and rel[3] == 0:
        return False
    return len(rel) >= 5 or (len(rel) == 4 and rel[2] != 3)


def backend_of(version: str, m: Matrix, ctx: Context) -> str | None:
    """'native' or 'xla' for an installed torch-neuronx, from matrix rows: the selected
    matrix's when it pairs the version, else the newest known release that does
    (ctx.neuronx_releases). Only where doctor did not look them up (a direct call) does the
    version's shape decide (xla_era); a version no known matrix pairs is None (unknown)."""
    if m.pair_for_neuronx(version) is not None:
        return m.backend
    if ctx.neuronx_releases is not None:
        return ctx.neuronx_releases[0].backend if ctx.neuronx_releases else None
    era = xla_era(version)
    return None if era is None else ("xla" if era else "native")


def _python(ctx: Context, facts: HostFacts) -> str:
    return shlex.quote(ctx.python_flag or facts.target.path)


def _native_problems(t: Any, nx: Any, m: Matrix, ctx: Context) -> list[str]:
    out = []
    if nx and backend_of(nx.version, m, ctx) == "xla":
        torch = ".".join(nx.version.split(".")[:3])
        out.append(f"torch-neuronx {nx.version} is the XLA-based library (torch {torch}, "
                   "xm.xla_device()), not the native 'neuron' device: 'cannot import name "
                   "neuron from torch' follows")
    xla_left = bool(out) or t.dist("torch-xla") is not None
    for name in XLA_DISTS:
        d = t.dist(name)
        # libneuronxla alone may be a dependency of the native wheel (the stand-in index models
        # it so; no page read says otherwise): a leftover only beside torch-xla or an XLA build
        if d and (name != "libneuronxla" or xla_left):
            out.append(f"{d.name} {d.version} is installed beside the native backend (XLA-era "
                       "package: it can register a second PrivateUse1 backend or shadow "
                       "torch.neuron)")
    return out


def _native_release(ctx: Context) -> str:
    """The release to check a native build against: the one whose rows pair it."""
    known = [k for k in ctx.neuronx_releases or () if k.backend == "native"]
    return known[0].release if known else "<a native release: see neuron-env matrix list>"


@check("backend.lineage", "backend")
def backend_lineage(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """no XLA-era torch-neuronx or torch_xla beside the native backend."""
    t = facts.target
    if not t.usable:
        return result("backend.lineage", "skip",
                      "target interpreter unusable (see python.version)")
    nx = t.dist("torch-neuronx")
    if nx and m.placeholder(nx.name, nx.version):
        return result("backend.lineage", "skip",
                      "torch-neuronx is the public placeholder (see backend.origin)")
    xla = [d for n in XLA_DISTS if (d := t.dist(n))]
    observed = {"torch-neuronx": nx.version if nx else None,
                **{d.name: d.version for d in xla}}
    docs = m.doc("troubleshooting") or m.doc("setup")
    if m.backend == "xla":
        if nx and backend_of(nx.version, m, ctx) == "native":
            return result("backend.lineage", "fail",
                          f"torch-neuronx {nx.version} is the native backend, but Neuron "
                          f"{m.release} is an XLA-based release", observed=observed,
                          fix="check against the native release: neuron-env doctor --matrix "
                              + _native_release(ctx), docs=docs)
        return result("backend.lineage", "pass" if nx else "skip",
                      f"XLA-based torch-neuronx {nx.version}" if nx else
                      "torch-neuronx not installed (see backend.pairing)", observed=observed)
    problems = _native_problems(t, nx, m, ctx)
    if problems:
        named = " ".join(problems)
        remove = sorted({d.name for d in xla if f"{d.name} {d.version}" in named}
                        | ({nx.name} if nx and backend_of(nx.version, m, ctx) == "xla"
                           else set()))
        fix = (f"{_python(ctx, facts)} -m pip uninstall -y {' '.join(remove)} && "
               + install_cmd(ctx, facts))
        return result("backend.lineage", "fail", problems[0] + (
            f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""), observed=observed,
            expected="the native torch-neuronx ("
                     + " / ".join(fmt_spec(p.torch_neuronx) for p in m.pairs_newest_first())
                     + ") and no torch-xla or libneuronxla", fix=fix, docs=docs,
            details={"problems": problems})
    if nx is None:
        return result("backend.lineage", "skip",
                      "torch-neuronx not installed (see backend.pairing)")
    return result("backend.lineage", "pass",
                  f"native torch-neuronx {nx.version}; no XLA-era packages", observed=observed)


@check("backend.collectives", "backend")
def backend_collectives(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """aws-neuronx-collectives present and matching the release."""
    d = facts.driver
    name = "aws-neuronx-collectives"
    if not d.manager:
        return result("backend.collectives", "skip",
                      d.no_dpkg("no dpkg status: the collectives package cannot be checked"))
    why = _not_neuron_host(facts, m)
    have, want = d.packages.get(name), m.apt(name)
    pin = want.version if want and want.version else None
    if why and not have:
        return result("backend.collectives", "skip", f"{why}: not needed here")
    observed = {name: have, "aws-neuronx-runtime-lib": d.packages.get("aws-neuronx-runtime-lib")}
    from neuron_env.checks.tools import package_fix

    fix, fix_cmd = package_fix(facts, m, [name])  # no apt-get where no Neuron repository (#44)
    docs = m.doc("runtime_notes") or m.doc("setup")
    if not have:
        return result("backend.collectives", "fail",
                      f"{name} is not installed: torch.distributed with the 'neuron' backend "
                      "(DDP, FSDP2, more than one NeuronCore) needs it", observed=observed,
                      expected=pin, fix=fix, fix_command=fix_cmd, docs=docs)
    rt = observed["aws-neuronx-runtime-lib"]
    if rt and minor(rt) != minor(have):
        return result("backend.collectives", "fail",
                      f"{name} {base_version(have)} does not match aws-neuronx-runtime-lib "
                      f"{base_version(rt)} (different releases)", observed=observed,
                      expected=pin, docs=docs,
                      fix=(both := package_fix(facts, m, [name, "aws-neuronx-runtime-lib"]))[0],
                      fix_command=both[1])
    if pin and base_version(have) != pin:
        confirmed = want is not None and want.confirmed
        level = "fail" if confirmed and minor(have) != minor(pin) else "warn"
        return result("backend.collectives", level,
                      f"{name} {base_version(have)}; Neuron {m.release} ships {pin}"
                      + ("" if confirmed else " (component version, not a confirmed pin)"),
                      observed=observed, expected=pin, fix=fix, fix_command=fix_cmd, docs=docs)
    return result("backend.collectives", "pass", f"{name} {base_version(have)}",
                  observed=observed, expected=pin)
