"""doctor's text view: the grouped checks (report/text.py) with what only doctor says: how to
rehearse on a host without a Neuron device first, the fixes `doctor --fix` ran, the device smoke
test as the last step."""

from __future__ import annotations

from typing import Any

from neuron_env.report.model import REHEARSAL_VENV, REHEARSE, Report
from neuron_env.report.text import compose, mark
from neuron_env.util.wrap import CMD


def render(report: Report, verbose: bool = False, colour: bool = False) -> str:
    """report/text.py's checks and steps (the steps end with `neuron-env smoke`), led by the
    rehearsal advice, the fixes run after the checks."""
    from neuron_env.report import steps as st

    return compose(report, st.plan(report.results, smoke=True), verbose, colour,
                   lead=rehearsal_lead(report),
                   after=fixes_run(report.extra.get("fixes") or [], colour))


def rehearsal_lead(report: Report) -> list[str]:
    """doctor on a host with no Neuron device and no Trainium instance type (a laptop, a CI
    runner): first, how to rehearse here, with the emulated backend."""
    by_id = {r.id: r for r in report.results}
    devices = (report.target.get("driver") or {}).get("device_nodes")
    inst, emu = by_id.get("instance.type"), by_id.get("backend.emulator")
    if report.target.get("root") not in ("/", None):
        return []  # an image under --root: not this host to rehearse on
    if devices or devices is None or inst is None or inst.status == "pass" or (
            emu is not None and emu.status != "pass"):
        return []
    return ["No Neuron device here. To rehearse on this host (the emulated backend, on the CPU):",
            f"     {CMD}{REHEARSE}",
            f"     {CMD}neuron-env doctor --python {REHEARSAL_VENV}/bin/python", ""]


def fixes_run(done: list[dict[str, Any]], colour: bool) -> list[str]:
    """doctor --fix: each fix that ran, and whether it worked (the checks above are the run
    after the fixes); a failed one is said here, not only in its output on stderr."""
    ran = [d for d in done if d.get("ran")]
    if not ran:
        return []
    out = ["", "Fixes run (doctor --fix):"]
    for d in ran:
        ok = d.get("exit_code") == 0
        out.append(f"  {mark('pass' if ok else 'fail', colour)} {d['id']}: "
                   + ("done" if ok else f"FAILED (exit {d.get('exit_code')}; its output is "
                      "above, on stderr)"))
        out.append(f"     {CMD}{d['command']}")
    return out
