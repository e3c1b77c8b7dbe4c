"""`doctor --format nhc`: the LBNL NHC / Slurm health-check form. One line on stdout, the reason
Slurm stores with a drained node (`scontrol update ... state=drain reason=...`); the exit status
is doctor's (0 healthy, non-zero drain)."""

from __future__ import annotations

from neuron_env.report.model import Report
from neuron_env.report.verdict import reason, verdict


def render(report: Report) -> str:
    doc = report.serialize()
    v = verdict(doc)
    prefix = "OK" if v in ("pass", "warn") else "ERROR"
    return f"{prefix}: {reason(doc)}\n"
