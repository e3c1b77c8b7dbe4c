"""backend.torch, backend.pairing, backend.origin, backend.tools."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from neuron_env.checks.registry import check, result
from neuron_env.guards import redact
from neuron_env.matrix.model import fmt_spec
from neuron_env.matrix.overrides import expected_index_urls
from neuron_env.report.model import Result
from neuron_env.util.names import canonicalize_name
from neuron_env.util.versions import Ver

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Index, Matrix
    from neuron_env.probes.facts import HostFacts
    from neuron_env.probes.interpreter import Dist, TargetFacts

NEURON_PACKAGES = ("torch-neuronx", "neuronx-cc", "nki", "libneuronxla", "neuronx-distributed",
                   "torch-neuron", "neuron-cc", "transformers-neuronx",
                   "aws-neuronx-runtime-discovery")


def install_cmd(ctx: Context, facts: HostFacts, torch_minor: str | None = None) -> str:
    parts = ["neuron-env", "install"]
    if ctx.matrix_flag:
        parts += ["--matrix", ctx.matrix_flag]
    parts += ["--python", ctx.python_flag or facts.target.path]
    if torch_minor:
        parts += ["--torch", torch_minor]
    return " ".join(shlex.quote(p) for p in parts)


def install_fix(ctx: Context, facts: HostFacts, m: Matrix, torch_minor: str | None = None,
                lead: str = "") -> dict[str, Any]:
    """fix/fix_command/fix_safe for "install the backend": never a line neuron-env would
    refuse (the planner is asked), and never into neuron-env's own environment."""
    from neuron_env.checks import fixes
    from neuron_env.checks.stack import inf1_fix, inf1_stack
    from neuron_env.errors import ResolutionError
    from neuron_env.install.plan import Inputs, make_plan

    t = facts.target
    if inf1_stack(facts) is not None:
        return inf1_fix()  # an Inf1 torch-neuron environment: never install torch-neuronx
    if ctx.own_prefix and t.prefix and t.prefix == ctx.own_prefix and not ctx.python_flag:
        text, cmd = fixes.get_python(facts, m, ctx)
        return {"fix": f"{t.path} is neuron-env's own environment (first on PATH), not a "
                       f"training environment: {text}" + (f": {cmd}" if cmd else ""),
                "fix_command": cmd, "fix_safe": bool(cmd and "sudo" not in cmd)}
    if t.version and not m.python.contains(t.version, prereleases=True):
        text, cmd = fixes.get_python(facts, m, ctx)
        return {"fix": text + (f": {cmd}" if cmd else ""), "fix_command": cmd}
    try:
        make_plan(m, Inputs(python=t.path, python_version=t.version or "", prefix=t.prefix or "",
                            os_id=facts.os.id, os_version=facts.os.version_id, arch=facts.arch,
                            installed={k: d.version for k, d in t.dists.items()},
                            torch=torch_minor))
    except ResolutionError as e:
        return {"fix": f"neuron-env cannot install here: {e.message} (see os.release/os.arch)"}
    cmd = install_cmd(ctx, facts, torch_minor)
    return {"fix": lead + cmd, "fix_command": cmd, "fix_safe": True}


def _inf1(facts: HostFacts) -> bool:
    from neuron_env.checks.stack import inf1_stack
    return inf1_stack(facts) is not None


def _unusable(id_: str, facts: HostFacts) -> Result | None:
    if not facts.target.usable:
        return result(id_, "skip", "target interpreter unusable (see python.version)")
    return None


@check("backend.torch", "backend")
def backend_torch(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """torch is installed, a version the release pairs, the CPU build."""
    if (r := _unusable("backend.torch", facts)) is not None:
        return r
    t = facts.target
    torch = t.dist("torch")
    pairs = [str(p.torch) for p in m.pairs_newest_first()]
    expected = " or ".join(f"torch {p}" for p in pairs)
    if torch is None:
        return result("backend.torch", "fail", f"torch is not installed in {t.path}",
                      expected=expected, **install_fix(ctx, facts, m))
    try:
        v = Ver(torch.version)
    except ValueError:
        return result("backend.torch", "fail",
                      f"torch has an invalid version {torch.version!r}",
                      observed=torch.version, expected=expected, **install_fix(ctx, facts, m))
    match = next((p for p in m.pairs if v.public == str(p.torch) or
                  Ver(v.public) == p.torch), None)
    if match is None:
        return result("backend.torch", "fail",
                      f"torch {torch.version} is not paired by Neuron {m.release} "
                      f"(it pairs {', '.join(pairs)})", observed=torch.version,
                      expected=expected, **install_fix(ctx, facts, m))
    cuda = sorted(d.name for k, d in t.dists.items() if k.startswith("nvidia-") and "cu" in k)
    if (v.local and "cu" in v.local) or cuda:
        return result("backend.torch", "warn",
                      f"torch {torch.version} is a CUDA build"
                      + (f" ({len(cuda)} nvidia-* packages)" if cuda else "")
                      + ": the Neuron backend uses the CPU build", observed=torch.version,
                      expected=expected,
                      **install_fix(ctx, facts, m, match.torch_minor, lead="reinstall the CPU "
                                    f"build from {_index_url(m, 'torch')}: "))
    return result("backend.torch", "pass", f"torch {torch.version}",
                  observed=torch.version, expected=expected)


def _index_url(m: Matrix, package: str) -> str:
    idx = m.index_for(package)
    return idx.url if idx else "the matrix's index"


@check("backend.pairing", "backend")
def backend_pairing(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """torch-neuronx matches the installed torch."""
    if (r := _unusable("backend.pairing", facts)) is not None:
        return r
    t = facts.target
    nx, torch = t.dist("torch-neuronx"), t.dist("torch")
    families = " or ".join(f"torch-neuronx{fmt_spec(p.torch_neuronx)} with torch {p.torch}"
                           for p in m.pairs_newest_first())
    if nx is None:
        return result("backend.pairing", "fail",
                      f"torch-neuronx is not installed in {t.path}", expected=families,
                      docs=m.doc("setup"), **install_fix(ctx, facts, m))
    observed = {"torch-neuronx": nx.version, "torch": torch.version if torch else None}
    if m.placeholder("torch-neuronx", nx.version) or nx.wrong_package_marker:
        return result("backend.pairing", "fail",
                      f"torch-neuronx {nx.version} is the public index's placeholder, not the "
                      "backend (see backend.origin)", observed=observed, expected=families,
                      **install_fix(ctx, facts, m))
    pair = m.pair_for_neuronx(nx.version)
    if pair is None:
        return _unpaired(facts, m, ctx, nx.version, observed, families)
    if torch is None:
        return result("backend.pairing", "fail",
                      f"torch-neuronx {nx.version} needs torch {pair.torch}, and torch is not "
                      "installed", observed=observed, expected=families,
                      **install_fix(ctx, facts, m, pair.torch_minor))
    try:
        tv = Ver(Ver(torch.version).public)
    except ValueError:
        tv = None
    if tv != pair.torch:
        return result("backend.pairing", "fail",
                      f"torch-neuronx {nx.version} needs torch {pair.torch}, found torch "
                      f"{torch.version}", observed=observed, expected=families,
                      **install_fix(ctx, facts, m, pair.torch_minor))
    return result("backend.pairing", "pass",
                  f"torch-neuronx {nx.version} with torch {torch.version}",
                  observed=observed, expected=families)


def _torch_minor(text: str | None) -> str | None:
    try:
        v = Ver(text or "")
    except ValueError:
        return None
    return f"{v.major}.{v.minor}"


def _unpaired(facts: HostFacts, m: Matrix, ctx: Context, version: str,
              observed: dict[str, Any], families: str) -> Result:
    """torch-neuronx `version` is not one of `m`'s families: name the release that built it,
    from the known matrices' rows (ctx.neuronx_releases), never from the version's shape. An
    older or newer build of the same backend is a warning with the upgrade (or --matrix) line;
    the other backend, or a version no known matrix pairs, fails."""
    torch = facts.target.dist("torch")
    # the newest known release whose rows pair it (doctor looks them up in every known matrix)
    k = next(iter(ctx.neuronx_releases or ()), None)
    minor = k.torch_minor if k else _torch_minor(torch.version if torch else None)
    fit = next((p for p in m.pairs if p.torch_minor == minor), None)

    def fix() -> dict[str, Any]:
        return install_fix(ctx, facts, m, fit.torch_minor if fit else None)

    if k is None:
        unknown = ("" if ctx.neuronx_releases is None else ", and no known matrix pairs it "
                   "(neuron-env matrix update may know a newer release)")
        return result("backend.pairing", "fail",
                      f"torch-neuronx {version} is not a Neuron {m.release} family{unknown}",
                      observed=observed, expected=families, **fix())
    if k.backend != m.backend:
        kind = "XLA-based" if k.backend == "xla" else "native"
        return result("backend.pairing", "fail",
                      f"torch-neuronx {version} is the {kind} torch-neuronx of Neuron "
                      f"{k.release} ({k.requirement}), not a Neuron {m.release} family: "
                      f"upgrade, or check against that release (--matrix {k.release})",
                      observed=observed, expected=families,
                      details={"built_by": k.release, "backend": k.backend}, **fix())
    tv = _torch_minor(torch.version if torch else None)
    try:
        same_torch = torch is not None and Ver(Ver(torch.version).public) == Ver(k.torch)
    except ValueError:
        same_torch = False
    if not same_torch or fit is None:
        return result("backend.pairing", "fail",
                      f"torch-neuronx {version} is Neuron {k.release}'s build and needs torch "
                      f"{k.torch}, found " + (f"torch {torch.version}" if torch else
                                              "no torch") + f" (Neuron {m.release} pairs "
                      f"{families})", observed=observed, expected=families,
                      details={"built_by": k.release, "torch_minor": tv}, **fix())
    newer = Ver(k.release) > m.version
    if newer:
        line = (f"torch-neuronx {version} is Neuron {k.release}'s build, newer than the matrix "
                f"checked (Neuron {m.release}): check against its release (--matrix "
                f"{k.release})")
        return result("backend.pairing", "warn", line, observed=observed,
                      expected=families, details={"built_by": k.release},
                      fix=f"neuron-env doctor --matrix {k.release}")
    lead = (f"upgrade to Neuron {m.release}'s torch-neuronx{fmt_spec(fit.torch_neuronx)} (or "
            f"keep {k.release}'s build and check with --matrix {k.release}): ")
    return result("backend.pairing", "warn",
                  f"torch-neuronx {version} is Neuron {k.release}'s build (torch {k.torch}); "
                  f"Neuron {m.release} ships torch-neuronx{fmt_spec(fit.torch_neuronx)}",
                  observed=observed, expected=families, docs=m.doc("setup"),
                  details={"built_by": k.release},
                  **install_fix(ctx, facts, m, fit.torch_minor, lead=lead))


def _manifest_entries(t: TargetFacts) -> dict[str, dict[str, Any]]:
    pkgs = (t.manifest or {}).get("packages")
    if not isinstance(pkgs, list):
        return {}
    return {canonicalize_name(str(p.get("name"))): p for p in pkgs
            if isinstance(p, dict) and p.get("name")}


def _norm(url: str) -> str:
    # the manifest records URLs with credentials masked: compare them masked
    return redact.text(url).rstrip("/").removesuffix("/simple").rstrip("/")


def _recorded_origin(d: Dist, entry: dict[str, Any] | None, want: Index | None,
                     allowed: dict[str, list[str]], problems: list[str],
                     notes: list[str]) -> None:
    """One package against what the install manifest recorded of where it came from."""
    if entry and want:
        src = str(entry.get("index_url") or entry.get("url") or "")
        ok = {_norm(u) for u in allowed.get(want.name, [want.url])}
        if entry.get("index") == want.name or entry.get("origin") == "wheelhouse":
            # neuron-env checked the URL against this index (or the chosen wheelhouse)
            # before installing; a mirror's URL is then fine
            if src and not any(_norm(src).startswith(u) for u in ok):
                notes.append(f"{d.name} came from {src} (a mirror or wheelhouse of the "
                             f"{want.name} index, checked at install)")
        elif src and not any(_norm(src).startswith(u) for u in ok):
            problems.append(f"{d.name} {d.version} came from {src}; the matrix requires "
                            f"the {want.name} index ({want.url})")
        if entry.get("version") and str(entry["version"]) != d.version:
            problems.append(f"{d.name} is {d.version} but the install manifest recorded "
                            f"{entry['version']}: changed after install")
    elif d.direct_url and want:
        notes.append(f"{d.name} was installed from {d.direct_url.get('url', 'a URL')}")


@check("backend.origin", "backend")
def backend_origin(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """no placeholder or foreign-index Neuron packages; the install finished."""
    if (r := _unusable("backend.origin", facts)) is not None:
        return r
    t = facts.target
    present = [d for n in (*NEURON_PACKAGES, "torch") if (d := t.dist(n))]
    neuron = [d for d in present if d.name.lower() != "torch"]
    if not neuron:
        return result("backend.origin", "skip", "no Neuron packages installed")
    problems: list[str] = []
    notes: list[str] = []
    for d in neuron:
        if m.placeholder(d.name, d.version) or d.wrong_package_marker:
            problems.append(f"{d.name} {d.version} is the PLACEHOLDER from the public index "
                            "('WRONG PACKAGE'), installed because the Neuron index was not used")
    recorded = _manifest_entries(t)
    allowed = expected_index_urls(m, ctx.index_overrides)
    for d in present:
        _recorded_origin(d, recorded.get(canonicalize_name(d.name)), m.index_for(d.name),
                         allowed, problems, notes)
    observed = {d.name: d.version for d in present}
    status = (t.manifest or {}).get("status")
    if t.manifest and status != "complete":
        problems.insert(0, f"the last neuron-env install into this environment did not finish "
                           f"(manifest status {status!r}: "
                           f"{(t.manifest or {}).get('error') or 'no reason recorded'})")
    if t.manifest_error:
        notes.append(t.manifest_error)
    only_unfinished = len(problems) == 1 and "did not finish" in problems[0]
    pip = f"{shlex.quote(t.path)} -m pip uninstall -y "
    cmd = (install_cmd(ctx, facts) if only_unfinished else
           pip + " ".join(d.name for d in neuron) + " && " + install_cmd(ctx, facts)
           if problems else None)
    fix = (f"re-run the install (it repairs): {cmd}" if only_unfinished else cmd)
    repair: dict[str, Any] = {"fix": fix, "fix_command": cmd, "fix_safe": True}
    if problems and _inf1(facts):  # Inf1's torch-neuron: never an install of torch-neuronx
        from neuron_env.checks.stack import inf1_fix
        repair = inf1_fix()
    if problems:
        return result("backend.origin", "fail", problems[0]
                      + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
                      observed=observed, expected="packages from " + ", ".join(
                          f"{i.name} ({i.url})" for i in m.indexes),
                      **repair, docs=m.doc("setup"),
                      details={"problems": problems,
                                                              "notes": notes})
    how = ("recorded by neuron-env's install manifest" if recorded else
           "no install manifest (not installed by neuron-env): origin beyond placeholder "
           "detection not recorded")
    mirror_only = notes and all("checked at install" in n for n in notes)
    if notes and not mirror_only:
        return result("backend.origin", "warn",
                      f"no placeholder packages; {notes[0]}", observed=observed,
                      details={"notes": notes}, **install_fix(ctx, facts, m))
    return result("backend.origin", "pass", f"no placeholder packages; {how}",
                  observed=observed, details={"notes": notes} if notes else None)


@check("backend.tools", "backend")
def backend_tools(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """neuronx-cc and nki are installed at the release's versions."""
    if (r := _unusable("backend.tools", facts)) is not None:
        return r
    t = facts.target
    if not m.companions:
        return result("backend.tools", "skip", "the matrix lists no companion tools")
    found, problems = {}, []
    for c in m.companions:
        d = t.dist(c.name)
        found[c.name] = d.version if d else None
        if d is None:
            problems.append(f"{c.name} is not installed")
        elif m.placeholder(c.name, d.version):
            problems.append(f"{c.name} {d.version} is the public index's placeholder")
        elif c.spec and not c.spec.contains(d.version, prereleases=True):
            problems.append(f"{c.name} {d.version} does not match {c.requirement}")
    expected = ", ".join(c.requirement for c in m.companions)
    if problems:
        return result("backend.tools", "fail", "; ".join(problems),
                      observed=found, expected=expected, **install_fix(ctx, facts, m))
    return result("backend.tools", "pass",
                  ", ".join(f"{k} {v}" for k, v in found.items()), observed=found,
                  expected=expected)


@check("backend.emulator", "backend")
def backend_emulator(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the CPU-emulated device is not mistaken for Trainium.

    The emulated backend is for rehearsal: say so loudly wherever it is installed; on a
    Neuron instance (a host fact) it is a failure: it would hide the hardware's state."""
    from neuron_env.checks.rehearsal import neuron_instance

    if (r := _unusable("backend.emulator", facts)) is not None:
        return r
    emu = facts.target.dist("neuron-emulator")
    if emu is None:
        return result("backend.emulator", "pass", "no emulated backend installed",
                      observed={"neuron-emulator": None})
    uninstall = f"{shlex.quote(facts.target.path)} -m pip uninstall -y neuron-emulator"
    real = facts.target.dist("torch-neuronx")
    if real is not None and not m.placeholder(real.name, real.version):
        return result("backend.emulator", "fail",
                      f"EMULATED backend neuron-emulator {emu.version} installed beside "
                      f"torch-neuronx {real.version}: the emulator refuses to load when a real "
                      "torch_neuronx is importable, but both claim the 'neuron' device and "
                      "dynamo backend; uninstall the emulator", observed=emu.version,
                      expected="torch-neuronx alone", fix=uninstall, fix_command=uninstall,
                      fix_safe=True)
    if (itype := neuron_instance(facts, m)) is not None:
        return result("backend.emulator", "fail",
                      f"EMULATED backend neuron-emulator {emu.version} installed on a "
                      f"{itype}: a Neuron instance is judged by its hardware (the driver and "
                      "device checks run), and an emulator there hides a missing or broken "
                      "device from every workload; uninstall it", observed=emu.version,
                      expected="no emulator on a Neuron instance", fix=uninstall,
                      fix_command=uninstall, fix_safe=True)
    return result("backend.emulator", "warn",
                  f"EMULATED neuron device (neuron-emulator {emu.version}): results come from "
                  "CPU emulation, not Trainium hardware", observed=emu.version,
                  details={"emulated": True})
