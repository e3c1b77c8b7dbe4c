"""instance.type, os.release, os.arch, python.version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuron_env.checks import fixes
from neuron_env.checks.registry import check, result
from neuron_env.matrix.model import fmt_spec
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix, OSEntry
    from neuron_env.probes.facts import HostFacts


def supported_families(m: Matrix) -> str:
    return ", ".join(f.family for f in m.instances if f.supported)


@check("instance.type", "instance")
def instance_type(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the instance type (flag, DMI, IMDS) is a family this release supports."""
    inst = facts.instance
    docs = m.doc("release_notes")
    expected = f"a supported family: {supported_families(m)}"
    if not inst.type:
        why = "; ".join(inst.notes) or "no source answered"
        return result("instance.type", "warn",
                      f"instance type unknown ({why})", observed=None, expected=expected,
                      fix="run on a Trn2/Trn3 instance, or pass --instance-type TYPE when "
                          "checking an image built elsewhere", docs=docs)
    src = {"flag": "assumed from --instance-type", "dmi": "from DMI",
           "imds": "from IMDS"}.get(inst.source or "", inst.source)
    fam, typ = m.instance_type(inst.type)
    observed = {"type": inst.type, "source": inst.source, "assumed": inst.assumed}
    if fam is None:
        return result("instance.type", "fail",
                      f"{inst.type} ({src}) has no Neuron devices supported by Neuron "
                      f"{m.release}", observed=observed, expected=expected,
                      fix=f"use a {supported_families(m)} instance"
                          + (" (or correct --instance-type)" if inst.assumed else ""),
                      docs=docs)
    if not fam.supported:
        return result("instance.type", "fail",
                      f"{inst.type} ({src}): {fam.family} is not supported by Neuron {m.release}",
                      observed=observed, expected=expected, fix=fam.reason, docs=docs)
    what = fam.accelerator or fam.family
    if typ and typ.devices:
        what += f", {typ.devices} device{'s' if typ.devices != 1 else ''} expected"
    note = "" if typ else "; this type is not listed in the matrix (device count not checked)"
    if typ and not typ.confirmed:
        note += "; its figures are not confirmed by AWS docs"
    return result("instance.type", "pass", f"{inst.type} ({what}) {src}{note}",
                  observed=observed, expected=expected)


@check("os.release", "os")
def os_release(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the OS release is supported, with prebuilt wheels."""
    o = facts.os
    supported = [e for e in m.os if e.status in ("supported", "unstated")
                 and not e.disputed_status]
    expected = ", ".join(e.label for e in supported)
    if o.error:
        return result("os.release", "fail", f"cannot tell the OS: {o.error}",
                      expected=expected, fix="check --root, or that /etc/os-release exists")
    observed = {"id": o.id, "version_id": o.version_id, "codename": o.codename,
                "pretty_name": o.pretty_name}
    name = o.pretty_name or f"{o.id} {o.version_id or ''}".strip()
    entry = m.os_entry(o.id, o.version_id or "")
    if entry is None:
        known_versions = [e.label for e in m.os if e.id == o.id]
        like = f" (a derivative of {', '.join(o.id_like)})" if o.id_like else ""
        why = (f"{name} is not in Neuron {m.release}'s matrix" if known_versions
               else f"{name}{like} is not supported by Neuron {m.release}")
        return result("os.release", "fail", why, observed=observed,
                      expected=expected, docs=m.doc("setup"), **_dlami_fix(m))
    if entry.status == "unstated":
        return Result("os.release", "os", "warn",
                      f"{name}: the matrix's source lists it without saying whether Neuron "
                      f"{m.release} supports it", observed=observed, expected=expected,
                      fix=entry.message, docs=m.doc("release_notes"))
    if entry.status != "supported":
        return result("os.release", "fail", f"{name}: {entry.status}",
                      observed=observed, expected=expected, docs=m.doc("release_notes"),
                      **_dlami_fix(m, entry.message))
    if entry.disputed_status:
        return _disputed_os(m, entry, name, observed, expected)
    neuronx = facts.target.dist("torch-neuronx") if facts.target.usable else None
    if entry.wheels is False and neuronx is None:
        return result("os.release", "warn",
                      f"{name} is supported, but prebuilt wheels are not published for it",
                      observed=observed, expected=expected, fix=entry.message,
                      docs=m.doc("setup"))
    return result("os.release", "pass", f"{name} (supported)", observed=observed,
                  expected=expected)


def _disputed_os(m: Matrix, entry: OSEntry, name: str, observed: dict[str, Any],
                 expected: str) -> Result:
    """The sources disagree about this OS: say both, with their sources; a warning, not a fail."""
    ours, theirs = m.source_by_id(entry.source), m.source_by_id(entry.disputed_source)
    how = ", ".join(x for x in (
        "no prebuilt wheels" if entry.wheels is False else None,
        "build from source" if entry.build_from_source else None,
        "no new DLAMIs" if entry.new_dlamis is False else None) if x)
    summary = (f"{name}: sources disagree — {entry.status}" + (f" ({how})" if how else "")
               + f" per {ours.title or ours.id if ours else 'the matrix'}; "
               f"{entry.disputed_status} per "
               f"{theirs.title or theirs.id if theirs else 'another source'}")
    return result("os.release", "warn", summary, observed=observed, expected=expected,
                  fix=entry.message, docs=ours.url if ours else m.doc("release_notes"),
                  details={"sources": {entry.status: ours.url if ours else None,
                                       entry.disputed_status: theirs.url if theirs else None}})


@check("os.arch", "os")
def os_arch(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the machine architecture has Neuron packages."""
    expected = ", ".join(m.architectures)
    if facts.arch is None:
        return result("os.arch", "warn",
                      f"architecture unknown ({facts.arch_source})", expected=expected)
    if facts.arch in m.architectures:
        return result("os.arch", "pass", facts.arch, observed=facts.arch,
                      expected=expected)
    return result("os.arch", "fail",
                  f"{facts.arch}: Neuron {m.release} ships {expected} packages only",
                  observed=facts.arch, expected=expected,
                  fix="use an x86_64 Trn2/Trn3 instance and AMI")


def _python_fix(facts: HostFacts, m: Matrix, ctx: Context, lead: str = "") -> dict[str, Any]:
    from neuron_env.checks.stack import inf1_fix, inf1_stack

    if inf1_stack(facts) is not None:  # an Inf1 torch-neuron environment: its own Pythons
        return inf1_fix()
    text, cmd = fixes.get_python(facts, m, ctx)
    return {"fix": lead + text + (f": {cmd}" if cmd else ""), "fix_command": cmd,
            "fix_safe": bool(cmd and "sudo" not in cmd and " && " not in cmd)}


def _dlami_fix(m: Matrix, lead: str | None = None) -> dict[str, Any]:
    text, cmd = fixes.dlami(m)
    return {"fix": (f"{lead} " if lead else "") + text + (f": {cmd}" if cmd else ""),
            "fix_command": cmd}


@check("python.version", "python")
def python_version(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the target interpreter runs and its Python is in the release's range."""
    t = facts.target
    expected = fmt_spec(m.python)
    if not t.usable:
        return result("python.version", "fail", f"target interpreter unusable: "
                      f"{t.error}", observed={"path": t.path}, expected=expected,
                      **_python_fix(facts, m, ctx, "pass --python with the training "
                                    "environment's interpreter, or "))
    observed = {"path": t.path, "version": t.version, "venv": t.venv, "prefix": t.prefix,
                "chosen_by": t.chosen_by}
    where = f"{t.path} ({'venv' if t.venv else 'not a venv'}, chosen by {t.chosen_by})"
    if not m.python.contains(t.version, prereleases=True):
        return result("python.version", "fail",
                      f"Python {t.version} at {where} is outside {expected}",
                      observed=observed, expected=expected,
                      **_python_fix(facts, m, ctx))
    if t.broken:
        return result("python.version", "warn",
                      f"Python {t.version} at {where}; {len(t.broken)} distribution(s) with "
                      f"broken metadata: {t.broken[0]}", observed=observed, expected=expected,
                      fix="reinstall or remove the broken distributions (pip check lists them)")
    return result("python.version", "pass", f"Python {t.version} at {where}",
                  observed=observed, expected=expected)
