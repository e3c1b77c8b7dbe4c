"""The install no-op fast path: is the target already what the plan asks for? Reads only the
target's facts (its manifest and distributions): no network, no resolution machinery."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from neuron_env.report.model import Result


def _specifier(spec: str, name: str) -> SpecifierSet | None:
    """`torch==2.14.0` -> `==2.14.0` (a plan's requirements are `name` + specifier)."""
    rest = spec[len(name):].split(";", 1)[0].strip() if spec.startswith(name) else None
    if rest is None or rest.startswith(("[", "@")):
        return None
    try:
        return SpecifierSet(rest)
    except InvalidSpecifier:
        return None


def up_to_date(plan, t) -> str | None:
    """Why nothing needs doing, or None. Reads only the target's facts: no network."""
    man = t.manifest or {}
    if man.get("status") != "complete" or (man.get("plan") or {}).get("key") != plan.key:
        return None
    for p in man.get("packages") or []:
        d = t.dist(str(p.get("name")))
        if d is None or d.version != str(p.get("version")):
            return None
    for r in plan.requirements:
        d = t.dist(r.name)
        if d is None:
            return None
        spec = _specifier(r.spec, r.name) if r.source == "index" else None
        if r.source == "index" and (spec is None or not spec.contains(d.version, True)):
            return None
    return f"already installed by neuron-env {man.get('tool', {}).get('version', '?')} " \
           f"at {man.get('created', '?')} (plan {plan.key})"


def nothing_to_do(why: str) -> Result:
    """The install step's result when there was nothing to do (doctor's backend checks on the
    target follow it: ExecOptions.judge, given by the command, for install sits below checks)."""
    return Result("install.packages", "install", "pass", f"nothing to do: {why}")
