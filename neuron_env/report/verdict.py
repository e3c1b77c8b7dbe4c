"""Pure: what one doctor report (its JSON body) says about a node, in the few words an engine
needs: a verdict, a one-line reason, the failing checks and the versions that drift."""

from __future__ import annotations

from typing import Any

VERDICT_OF_EXIT = {0: "pass", 1: "fail", 2: "error", 3: "error", 4: "timeout"}
BAD = ("fail", "error")
REASON_MAX = 120  # Slurm keeps the reason; sinfo shows ~40 chars, scontrol the whole line

# version drift: what a fleet must agree on (component -> where a doctor report has it)
COMPONENTS = ("torch", "torch-neuronx", "driver", "runtime")
_PKG_KEYS = {"torch": ("torch",), "torch-neuronx": ("torch-neuronx", "torch_neuronx")}
_RUNTIME_PKGS = ("aws-neuronx-runtime-lib",)


def verdict(doc: dict[str, Any]) -> str:
    """pass / warn / fail / error / timeout from a doctor document (or its error envelope)."""
    code = doc.get("exit_code")
    v = VERDICT_OF_EXIT.get(code, "error") if isinstance(code, int) else "error"
    if v == "pass" and (doc.get("summary") or {}).get("warn"):
        return "warn"
    return v


def problems(doc: dict[str, Any], strict: bool | None = None) -> list[dict[str, str | None]]:
    """The results that made the run fail (fail/error; warnings too under --strict), each with
    its fix (the runnable command where the check gave one, else its fix text, else None)."""
    strict = doc.get("strict", False) if strict is None else strict
    bad = (*BAD, "warn") if strict else BAD
    return [{"id": str(r.get("id")), "status": str(r.get("status")),
             "summary": str(r.get("summary", "")), "fix": _fix(r)}
            for r in doc.get("results") or [] if r.get("status") in bad]


def _fix(r: dict[str, Any]) -> str | None:
    fix = r.get("fix_command") or r.get("fix")
    return None if fix is None else str(fix)


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    """Every check's status, by check id (a fleet's pass/warn/fail map across nodes)."""
    return {str(r.get("id")): str(r.get("status")) for r in doc.get("results") or []
            if isinstance(r, dict)}


def reason(doc: dict[str, Any]) -> str:
    """One line, no newlines, bounded: usable as `scontrol update ... reason=...`."""
    return one_line(reason_text(doc), REASON_MAX)


def reason_text(doc: dict[str, Any], bad: list[dict[str, str | None]] | None = None) -> str:
    """reason() before it is made one line (`bad`: problems(doc), where already known)."""
    v = verdict(doc)
    if v in ("pass", "warn"):
        s = doc.get("summary") or {}
        text = f"neuron-env: ok ({s.get('pass', 0)} pass, {s.get('warn', 0)} warn)"
    elif doc.get("error"):  # the error envelope: doctor could not run at all
        text = f"neuron-env: {v}: {(doc['error'] or {}).get('message', '')}"
    else:
        bad = problems(doc) if bad is None else bad
        if not bad:
            text = f"neuron-env: {v} (exit {doc.get('exit_code')})"
        else:
            text = f"neuron-env: {bad[0]['id']}: {bad[0]['summary']}"
            if len(bad) > 1:
                text += f" (+{len(bad) - 1} more)"
    return text


def one_line(text: str, limit: int) -> str:
    """Masked for credentials FIRST (guards/redact), then sanitised (guards.text.clean: a node's
    ESC or CR never reaches a terminal, Slurm or NPD raw) and on one line, THEN cut to `limit`."""
    from neuron_env.guards.redact import mask
    from neuron_env.guards.text import clean, cut

    return cut(clean(" ".join(mask(str(text)).split()), one_line=True), limit)


def versions(doc: dict[str, Any]) -> dict[str, str | None]:
    """torch, torch-neuronx, driver and runtime versions as this report saw them."""
    target = doc.get("target") or {}
    pkgs = {str(k).lower(): v for k, v in (target.get("packages") or {}).items()}
    driver = target.get("driver") or {}
    apt = driver.get("apt_packages") or {}
    out: dict[str, str | None] = {}
    for comp, keys in _PKG_KEYS.items():
        out[comp] = next((pkgs[k] for k in keys if pkgs.get(k)), None)
    out["driver"] = driver.get("module_version") or apt.get("aws-neuronx-dkms")
    out["runtime"] = next((apt[k] for k in _RUNTIME_PKGS if apt.get(k)), None)
    # a report is someone else's text: a version is a string (a list would break the counts)
    return {k: None if v is None else str(v) for k, v in out.items()}


def instance_id(doc: dict[str, Any]) -> str | None:
    return ((doc.get("target") or {}).get("instance") or {}).get("instance_id")


def cost_kind(x: dict[str, Any]) -> str:
    """What a cost row is: a measurement of the instance it is priced as only when it ran on
    one (not emulated, and the priced type is the host's)."""
    if x.get("emulated"):
        return "rehearsal (emulated device)"
    if x.get("on_host") is True:
        return "measured"
    if x.get("on_host") is False:
        return f"priced as {x.get('instance_type') or 'given'}, not run on one"
    return "measured (where: not recorded)"
