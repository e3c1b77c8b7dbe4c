"""backend.stack: the release's own Python packages at the versions it ships;
backend.torch_neuron: an Inf1 torch-neuron environment is another product, not repaired with
torch-neuronx.

A release pins more than torch, torch-neuronx and neuronx-cc: libneuronxla (the PJRT plugin)
and torch-xla, which torch-neuronx imports, and the libraries built with it
(neuronx-distributed, transformers-neuronx, nki, ...): the matrix's [[stack]] rows. A missing
required one, or one from another release (the next release's libneuronxla pulled in by a loose
dependency: `Unknown flags in XLA_FLAGS`), is named with the pinned pip line for this release."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuron_env.checks.registry import check, verdict
from neuron_env.matrix.model import family_of, fmt_spec
from neuron_env.util.template import sh
from neuron_env.util.versions import Spec, Ver

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix, StackPackage
    from neuron_env.probes.facts import HostFacts
    from neuron_env.report.model import Result

# a wrong version of these breaks torch-neuronx itself (it imports them): a fail; a library
# built with the release (neuronx-distributed, ...) at another release's version: a warning
CORE = ("libneuronxla", "torch-xla")
INF1_GUIDE = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/archive/setup/legacy-inf1/"
              "pytorch.html")
INF1 = ("torch-neuron", "neuron-cc")


def _ver(text: str) -> Ver | None:
    try:
        return Ver(text)
    except ValueError:
        return None


def inf1_stack(facts: HostFacts) -> Any:
    """The Inf1 torch-neuron distribution when the target holds it and no torch-neuronx."""
    t = facts.target
    if not t.usable or t.dist("torch-neuronx") is not None:
        return None
    return t.dist("torch-neuron")


def inf1_fix() -> dict[str, Any]:
    """What to do for an Inf1 torch-neuron environment: AWS's Inf1 guide, never an install of
    torch-neuronx (a different product for Trn1/Trn2/Inf2)."""
    return {"fix": "torch-neuron is AWS's Inf1 stack, which neuron-env does not install or "
                   f"repair: follow AWS's Inf1 PyTorch setup guide ({INF1_GUIDE}); on a "
                   "Trn/Inf2 instance, use a new environment for torch-neuronx"}


@check("backend.torch_neuron", "backend")
def backend_torch_neuron(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """an Inf1 torch-neuron environment is named, not repaired with torch-neuronx."""
    t = facts.target
    if not t.usable:
        return verdict("skip", "target interpreter unusable (see python.version)")
    legacy = [d for d in (t.dist(n) for n in INF1) if d is not None]
    if not legacy:
        return verdict("pass", "no Inf1 packages (torch-neuron, neuron-cc)",
                       observed={n: None for n in INF1})
    observed = {d.name: d.version for d in legacy}
    names = ", ".join(f"{d.name} {d.version}" for d in legacy)
    if t.dist("torch-neuronx") is None:
        return verdict("fail", f"{names}: this is an Inf1 (torch-neuron) environment; "
                       "neuron-env checks torch-neuronx on Trn1/Trn2/Inf2", observed=observed,
                       docs=INF1_GUIDE, **inf1_fix())
    py = sh(ctx.python_flag or t.path)
    cmd = f"{py} -m pip uninstall -y " + " ".join(d.name for d in legacy)
    return verdict("warn", f"{names} installed beside torch-neuronx (the Inf1 packages are "
                   "another product: both provide neuron modules)", observed=observed,
                   fix=f"remove the Inf1 packages from this environment: {cmd}",
                   fix_command=cmd, docs=INF1_GUIDE)


def _same(have: Ver | None, listed: str) -> bool:
    """The installed version is the listed one: a build tag the index adds (neuronx-cc
    `2.14.227.0+2d4f85be`) does not count where the release lists the version without one;
    a listed local version (torch-xla `1.13.1+torchneurong`) must match whole."""
    want = _ver(listed)
    if have is None or want is None:
        return False
    return have == want or (not want.local and Ver(have.public) == want)


def _rows(m: Matrix, name: str, minor: str, fam: str | None) -> list[StackPackage]:
    """`name`'s rows for this torch minor and instance family (a row without `torch` serves
    every pair; one without `families`, every family)."""
    return [r for r in m.stack_rows(name) if r.torch in (None, minor)
            and (not r.families or fam is None or fam in r.families)]


def _judge(m: Matrix, name: str, rows: list[StackPackage], dist: Any, minor: str,
           nx: str) -> tuple[str, str] | None:
    """(status, problem) for one package of the stack; None when it is right."""
    want = ", ".join(dict.fromkeys(r.version for r in rows))
    if dist is None:
        if any(r.required for r in rows):
            return "fail", (f"{name} is not installed: torch-neuronx {nx} needs it (Neuron "
                            f"{m.release} ships {name} {want})")
        return None
    have = _ver(dist.version)
    if any(_same(have, r.version) for r in rows):
        return None
    other = [r for r in m.stack_rows(name) if _same(have, r.version)]
    level = "fail" if name in CORE else "warn"
    if other:
        return level, (f"{name} {dist.version} is Neuron {m.release}'s build for torch "
                       f"{other[0].torch}, not for torch {minor} (wants {want})")
    return level, (f"{name} {dist.version} is not from Neuron {m.release} (it ships {want}): "
                   "a package from another release"
                   + (" ('Unknown flags in XLA_FLAGS' follows)" if name == "libneuronxla"
                      else ""))


def pip_fix(m: Matrix, ctx: Context, facts: HostFacts, pins: list[str]) -> str:
    """The pinned pip line for this release: the Neuron index (a mirror when overridden)
    beside PyPI, where torch-xla and the third-party packages live."""
    py = sh(ctx.python_flag or facts.target.path)
    idx = m.index_for("libneuronxla") or m.index_for("torch-neuronx")
    url = (ctx.index_overrides or {}).get(idx.name, idx.url) if idx else None
    return (f"{py} -m pip install " + " ".join(sh(p) for p in pins)
            + (f" --extra-index-url {sh(url)}" if url else ""))


@check("backend.stack", "backend")
def backend_stack(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """libneuronxla, torch-xla and the release's libraries at its versions."""
    t = facts.target
    if not t.usable:
        return verdict("skip", "target interpreter unusable (see python.version)")
    if not m.stack:
        return verdict("skip", f"the matrix of Neuron {m.release} lists no Python stack "
                       "([[stack]]): only torch, torch-neuronx and neuronx-cc are compared")
    nx = t.dist("torch-neuronx")
    pair = m.pair_for_neuronx(nx.version) if nx is not None else None
    if nx is None or pair is None:
        return verdict("skip", "torch-neuronx not installed or not from this release (see "
                       "backend.pairing)")
    minor = pair.torch_minor
    fam = family_of(facts.instance.type) if facts.instance.type else None
    observed: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    pins: list[str] = []
    for name in dict.fromkeys(r.name for r in m.stack):
        rows = _rows(m, name, minor, fam)
        if not rows:
            continue
        dist = t.dist(name)
        observed[name] = dist.version if dist else None
        newest = max(rows, key=lambda r: _ver(r.version) or Ver("0")).version
        expected[name] = newest
        got = _judge(m, name, rows, dist, minor, nx.version)
        if got is not None:
            problems.append(got)
            pins.append(f"{name}=={newest}")
    if not observed:
        return verdict("skip", f"no [[stack]] row of Neuron {m.release} applies to torch "
                       f"{minor}" + (f" on {fam}" if fam else ""))
    if not problems:
        return verdict("pass", f"{len([v for v in observed.values() if v])} package(s) of "
                       f"Neuron {m.release}'s stack at its versions", observed=observed,
                       expected=expected)
    cmd = pip_fix(m, ctx, facts, pins)
    problems.sort(key=lambda p: p[0] != "fail")  # the summary leads with a failure
    status = problems[0][0]
    return verdict(status, problems[0][1] + (f" (+{len(problems) - 1} more)"
                                             if len(problems) > 1 else ""),
                   observed=observed, expected=expected,
                   fix=f"install Neuron {m.release}'s versions: {cmd}", fix_command=cmd,
                   fix_safe=True, docs=m.doc("release_notes") or m.doc("setup"),
                   details={"problems": [p for _, p in problems]})


# the Neuron distributions whose declared requirements on third-party packages are judged
NEURON_DISTS = ("neuronx-cc", "neuron-cc", "torch-neuronx", "torch-neuron", "libneuronxla",
                "torch-xla", "neuronx-hwm", "transformers-neuronx", "neuronx-distributed",
                "optimum-neuron", "nki")
# the third-party packages the probe reads requirements on (inside/probe.py PINNED), and what a
# version outside the range does
PINNED = {"numpy": "its compiled modules fail ('module compiled against API version ... but "
                   "this version of numpy is ...')",
          "optimum": "optimum-neuron subclasses optimum's classes of that range: imports and "
                     "exports fail on another"}


def pinned_specs(dist: Any, name: str) -> list[Spec]:
    """The ranges of `name` a distribution declares (`Requires-Dist: numpy (<=1.25.2,>=1.24.3)`);
    a requirement under an environment marker (an extra, a Python version) is left out."""
    out = []
    for req in getattr(dist, "requires_pinned", ()):
        body, _, marker = req.partition(";")
        head = body[:len(name)].lower()
        rest = body[len(name):]
        if head != name or marker.strip() or (rest[:1] and rest[:1] not in " (<>=!~["):
            continue
        text = rest.strip().strip("()").strip()
        if not text:
            continue
        try:
            out.append(Spec(text))
        except ValueError:
            continue
    return out


def _pin_problems(t: Any) -> tuple[list[tuple[str, str, str]], dict[str, Any], dict[str, Any]]:
    """(name, problem, wanted range) for each pinned package outside a declared range."""
    problems, observed, expected = [], {}, {}
    for name, effect in PINNED.items():
        declared = [(d, s) for n in NEURON_DISTS if (d := t.dist(n))
                    for s in pinned_specs(d, name)]
        if not declared:
            continue
        have = t.dist(name)
        observed[name] = have.version if have else None
        expected.update({f"{d.name} {d.version}": f"{name}{fmt_spec(s)}" for d, s in declared})
        bad = [(d, s) for d, s in declared
               if have is None or not s.contains(have.version, prereleases=True)]
        if bad:
            d, s = bad[0]
            what = f"{name} {have.version} is outside" if have else f"{name} is not installed:"
            problems.append((name, f"{what} {d.name} {d.version}'s declared range "
                                   f"{fmt_spec(s)}: {effect}",
                             ",".join(dict.fromkeys(fmt_spec(x) for _, x in declared))))
    return problems, observed, expected


@check("backend.pins", "backend")
def backend_pins(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """numpy, optimum within the ranges the installed Neuron packages declare."""
    t = facts.target
    if not t.usable:
        return verdict("skip", "target interpreter unusable (see python.version)")
    problems, observed, expected = _pin_problems(t)
    if not observed:
        return verdict("skip", "no installed Neuron package declares a numpy or optimum range")
    if not problems:
        return verdict("pass", ", ".join(f"{n} {v}" for n, v in observed.items())
                       + " within the ranges the Neuron packages declare", observed=observed,
                       expected=expected)
    cmd = (f"{sh(ctx.python_flag or t.path)} -m pip install "
           + " ".join(sh(name + want) for name, _, want in problems))
    return verdict("fail", problems[0][1] + (f" (+{len(problems) - 1} more)"
                                             if len(problems) > 1 else ""),
                   observed=observed, expected=expected,
                   fix=f"install what the Neuron packages declare: {cmd}", fix_command=cmd,
                   fix_safe=True,
                   details={"problems": [p for _, p, _ in problems],
                            "source": "the Requires-Dist of the installed packages' metadata "
                                      "(as published on the Neuron index)"})
