"""`doctor --format npd`: the node-problem-detector custom-plugin contract: exit 0 OK, 1 a
problem, anything else unknown (doctor's 2/3/4), and ONE short line on stdout, which NPD puts in
the node condition's message (it keeps `max_output_length` characters, 80 by default)."""

from __future__ import annotations

from neuron_env.report.model import Report
from neuron_env.report.verdict import one_line, reason

NPD_MAX = 80


def render(report: Report) -> str:
    return one_line(reason(report.serialize()), NPD_MAX) + "\n"
