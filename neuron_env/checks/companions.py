"""backend.companions: torchvision, torchaudio, torchao built for the torch that is installed.

A companion ships C++ operators linked against one torch build. PyPI's torchvision is the CUDA
build of its torch release: beside torch 2.13.0+cpu its import dies with `operator
torchvision::nms does not exist` (which also breaks `import transformers`). The check judges
the installed versions against the matrix's [[torch_companions]] table and the build variant
(`+cpu`) against torch's, and (when doctor ran it: probes/companions.py) the real import."""

from __future__ import annotations

import shlex
from typing import Any

from neuron_env.checks.registry import check, result
from neuron_env.matrix.model import family_of, fmt_spec
from neuron_env.probes.companions import COMPANION_MODULES
from neuron_env.report.model import Result
from neuron_env.util.versions import Ver

DOCS = "https://pytorch.org/get-started/locally/"


def _ver(text: str) -> Ver | None:
    try:
        return Ver(text)
    except ValueError:
        return None


def _names(m: Any) -> list[str]:
    out = list(m.torch_companion_names())
    return out + [n for n in COMPANION_MODULES if n not in out]


def torch_index_url(m: Any, ctx: Any, local: str | None) -> str | None:
    """Where the build matching torch's variant lives: the matrix's torch index (a mirror
    when overridden) for +cpu; PyPI (None) for a torch without a local tag."""
    if local is None:
        return None
    idx = m.index_for("torch")
    if local == "cpu" and idx is not None:
        return str((ctx.index_overrides or {}).get(idx.name, idx.url))
    return f"https://download.pytorch.org/whl/{local}"


def fix_command(python: str, specs: list[str], url: str | None) -> str:
    """Reinstall the companions' matching build (no dependencies: torch stays as it is)."""
    cmd = (f"{shlex.quote(python)} -m pip install --force-reinstall --no-deps "
           + " ".join(shlex.quote(s) for s in specs))
    return cmd + (f" --index-url {shlex.quote(url)}" if url else "")


def _module(d: Any, row: Any) -> str:
    return str(row.provides if row is not None and row.provides else
            COMPANION_MODULES.get(d.name.lower(), d.name.replace("-", "_")))


def _from_torch_index(m: Any, name: str) -> bool:
    """Built where torch comes from (so its +cpu variant must match torch's); False for a
    companion the matrix takes from another index (torchao-neuron: the Neuron index)."""
    own = m.index_for(name)
    return own is None or own is m.index_for("torch")


def neuron_problems(facts: Any, m: Any, d: Any, tver: Ver) -> list[tuple[str, str]]:
    """A Neuron-built companion's own rules (its [[torch_companions]] row's `conflicts`,
    `families`, `torch_neuronx`), for any torch: a companion that shares a module with another
    installed distribution fails; a host family or torch-neuronx it does not support warns."""
    key = d.name.lower()
    rows = [c for c in m.torch_companions if c.name.lower() == key]
    if not rows or not any(c.conflicts or c.families or c.torch_neuronx for c in rows):
        return []
    minor = f"{tver.major}.{tver.minor}"
    row = next((c for c in rows if c.torch == minor), None)
    out: list[tuple[str, str]] = []
    t = facts.target
    for other in sorted({n for c in rows for n in c.conflicts}):
        o = t.dist(other)
        if o is not None:
            mod = rows[0].provides or other
            out.append(("fail", f"{o.name} {o.version} and {d.name} {d.version} are both "
                                f"installed: {d.name} provides the '{mod}' module itself, and "
                                f"the two overwrite each other's files"))
    if row is None:
        out.append(("warn", f"{d.name} {d.version} is built for torch "
                            + " or ".join(c.torch for c in rows) + f", not torch {minor}"))
    spec = (row or rows[0]).torch_neuronx
    nx = t.dist("torch-neuronx")
    if spec is not None and (nx is None or not spec.contains(nx.version, prereleases=True)):
        out.append(("warn", f"{d.name} needs torch-neuronx{fmt_spec(spec)}, found "
                            + (f"torch-neuronx {nx.version}" if nx else "no torch-neuronx")))
    fams = (row or rows[0]).families
    itype = getattr(facts.instance, "type", None)
    if fams and itype and family_of(itype) not in fams:
        out.append(("warn", f"{d.name} supports {', '.join(fams)} instances only; this is "
                            f"{itype}"))
    return out


def _judge(d: Any, row: Any, tver: Ver, imports: Any,
           torch_built: bool = True) -> tuple[str, str] | None:
    """(status, problem) for one installed companion; None when it is right."""
    cv = _ver(d.version)
    minor = f"{tver.major}.{tver.minor}"
    failed = imports.failure(_module(d, row)) if imports else None
    if failed:
        cause = failed.get("cause")
        return "fail", (f"{d.name} {d.version} does not import beside torch {tver}: "
                        f"{failed.get('error')}" + (f" (cause: {cause})" if cause else ""))
    if row is not None and cv is not None and not row.spec.contains(cv.public,
                                                                      prereleases=True):
        how = f"assumed pairing: {row.assumed}" if row.assumed else "the matrix's pairing"
        return ("warn" if row.assumed else "fail",
                f"{d.name} {d.version} is not built for torch {minor} (wants {row.requirement}; "
                f"{how})")
    if torch_built and cv is not None and cv.local != tver.local:
        mine = f"+{cv.local}" if cv.local else "PyPI's default (CUDA) build"
        return "warn", (f"{d.name} {d.version} is {mine}, torch {tver} is "
                        f"{'+' + tver.local if tver.local else 'the default build'}"
                        + ("" if imports else " (import not probed)"))
    return None


def expected_of(m: Any, minor: str) -> dict[str, str] | None:
    return {c.name: c.requirement for c in m.torch_companions if c.torch == minor} or None


def _neuron_result(facts: Any, m: Any, problems: list[tuple[str, str]], observed: Any,
                   expected: Any, details: dict[str, Any]) -> Result:
    """A Neuron-built companion's problems: a module conflict fails with the repair (remove the
    upstream package, then reinstall the Neuron build over the files it shared)."""
    status = "fail" if any(s == "fail" for s, _ in problems) else "warn"
    details["problems"] = [p for _, p in problems]
    summary = problems[0][1] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
    t = facts.target
    conflict = next((c for c in m.torch_companions if c.conflicts
                     and t.dist(c.name) is not None
                     and any(t.dist(o) is not None for o in c.conflicts)), None)
    if conflict is None:
        docs = m.doc("torchao_neuron") or m.doc("setup")
        return result("backend.companions", status, summary, observed=observed,
                      expected=expected, details=details, docs=docs)
    py = shlex.quote(t.path)
    idx = m.index_for(conflict.name)
    url = idx.url if idx else None
    cmd = (f"{py} -m pip uninstall -y " + " ".join(shlex.quote(o) for o in conflict.conflicts)
           + f" && {py} -m pip install --force-reinstall --no-deps "
           + shlex.quote(conflict.requirement)
           + (f" --index-url {shlex.quote(url)}" if url else ""))
    return result("backend.companions", status, summary, observed=observed,
                  expected=expected, details=details, docs=m.doc("torchao_neuron"),
                  fix=f"keep one provider of the module: {cmd}", fix_command=cmd,
                  fix_safe=True)


@check("backend.companions", "backend")
def backend_companions(facts: Any, m: Any, ctx: Any) -> Result:
    """torchvision/torchaudio/torchao are builds for the installed torch."""
    t = facts.target
    if not t.usable:
        return result("backend.companions", "skip",
                      "target interpreter unusable (see python.version)")
    torch = t.dist("torch")
    present = [d for d in (t.dist(n) for n in _names(m)) if d is not None]
    if torch is None or not present:
        return result("backend.companions", "skip",
                      "no torch companion installed (" + ", ".join(_names(m)) + ")"
                      if torch is not None else "torch is not installed")
    tver = _ver(torch.version)
    if tver is None:
        return result("backend.companions", "skip",
                      f"torch {torch.version} is not a version neuron-env can compare")
    imports = getattr(facts, "companions", None)
    minor = f"{tver.major}.{tver.minor}"
    observed = {"torch": torch.version, **{d.name: d.version for d in present}}
    details: dict[str, Any] = {"imports": imports.serialize() if imports else None}
    if imports is not None and (imports.error or imports.torch_error):
        details["probe"] = imports.error or f"torch does not import: {imports.torch_error}"
    problems, wanted = [], []
    own: list[tuple[str, str]] = []
    for d in present:
        row = m.torch_companion(d.name, minor)
        own += neuron_problems(facts, m, d, tver)
        got = _judge(d, row, tver, imports, _from_torch_index(m, d.name))
        if got is None:
            continue
        problems.append(got)
        wanted.append(row.requirement if row is not None else None)
    if own:
        return _neuron_result(facts, m, own + problems, observed, expected_of(m, minor),
                              details)
    expected = expected_of(m, minor)
    took = f" (import probe {imports.seconds:.1f}s)" if imports and imports.seconds else ""
    if not problems:
        status = "warn" if details.get("probe") else "pass"
        extra = f"; {details['probe']}" if details.get("probe") else ""
        return result("backend.companions", status,
                      ", ".join(f"{d.name} {d.version}" for d in present)
                      + f" match torch {torch.version}{took}{extra}", observed=observed,
                      expected=expected, details=details)
    status = "fail" if any(s == "fail" for s, _ in problems) else "warn"
    summary = problems[0][1] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
    details["problems"] = [p for _, p in problems]
    specs = [w for w in wanted if w]
    url = torch_index_url(m, ctx, tver.local)
    if len(specs) == len(wanted):
        cmd = fix_command(t.path, specs, url)
        where = f"from {url}" if url else "from PyPI"
        fix = f"install the builds for torch {torch.version} {where}: {cmd}"
        return result("backend.companions", status, summary + took,
                      observed=observed, expected=expected, fix=fix, fix_command=cmd,
                      fix_safe=True, docs=DOCS, details=details)
    return result("backend.companions", status, summary + took, observed=observed,
                  expected=expected, details=details, docs=DOCS,
                  fix=f"the matrix has no pairing for torch {minor}: install the companion "
                      f"build published for torch {torch.version} (see {DOCS})")
