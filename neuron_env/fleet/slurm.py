"""Slurm: drain or resume this node from a doctor report (`doctor --slurm-drain`, through
scontrol), and render the health-check/prolog script and its slurm.conf snippet."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from neuron_env import __version__
from neuron_env.errors import UsageError
from neuron_env.report.model import Report, Result
from neuron_env.report.verdict import reason, verdict
from neuron_env.util import template

TEMPLATES = Path(__file__).parent / "templates"
OURS = "neuron-env"  # every reason we set starts with this: we resume only our own drains
DEFAULT_PATH = "/etc/slurm/neuron-env-healthcheck.sh"
# the venv neuron-env's own user data and Image Builder component create: a health check judges
# it, not whatever `python3` slurmd's near-empty PATH finds
DEFAULT_PYTHON = "/opt/neuron-venv/bin/python"


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _scontrol(*args: str):
    from neuron_env.guards.proc import run

    return run(["scontrol", *args], timeout=15)


def _node_state(node: str) -> tuple[str, str]:
    """(State, Reason) from `scontrol show node -o`."""
    p = _scontrol("show", "node", node, "-o")
    state = re.search(r"\bState=(\S+)", p.stdout)
    why = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?= \w+=|$)", p.stdout)
    return (state.group(1) if state else ""), (why.group(1) if why else "")


def drain_or_resume(report: Report) -> Report:
    """A failing report drains the node with its one-line reason; a passing one resumes it when
    neuron-env drained it. The outcome is one more result, `fleet.slurm`."""
    doc, node = report.serialize(), node_name()
    if verdict(doc) in ("pass", "warn"):
        state, why = _node_state(node)
        if "DRAIN" not in state.upper() or not why.startswith(OURS):
            res = Result("fleet.slurm", "fleet", "pass", f"node {node}: healthy, left as is "
                         f"({state.lower() or 'state unknown'})")
            return _with(report, res)
        p, action = _scontrol("update", f"nodename={node}", "state=resume"), "resumed"
    else:
        why = reason(doc)
        p, action = _scontrol("update", f"nodename={node}", "state=drain", f"reason={why}"), \
            f"drained ({why})"
    if p.ok:
        return _with(report, Result("fleet.slurm", "fleet", "pass", f"node {node}: {action}"))
    return _with(report, Result(
        "fleet.slurm", "fleet", "warn", f"node {node}: scontrol could not be run: "
        f"{p.error or p.tail(200) or 'timed out'}", fix="run as SlurmUser/root on a Slurm node "
        "with scontrol on PATH"))


def _with(report: Report, res: Result) -> Report:
    from neuron_env.util.record import replace

    return replace(report, results=(*report.results, res))


def render_script(neuron_env: str, timeout: int, doctor_args: list[str],
                  python: str = DEFAULT_PYTHON) -> str:
    """The health-check script: every value checked and shell-quoted, filled in one pass
    (util/template.py): a value holding `@@DOCTOR_ARGS@@` stays literal text."""
    if not 5 <= timeout <= 54:
        raise UsageError(f"--timeout {timeout}: Slurm kills a health check after 60 s; use "
                         "5..54", hint="e.g. --timeout 45")
    template.values((("--neuron-env", neuron_env), ("--python", python),
                   *(("--doctor-args", a) for a in doctor_args)))
    for flag, v, eg in (("--neuron-env", neuron_env, "/opt/neuron-env/bin/neuron-env"),
                        ("--python", python, DEFAULT_PYTHON)):
        if not v.startswith("/"):
            raise UsageError(f"{flag} {v!r}: give an absolute path (slurmd runs the script "
                             "with an almost empty PATH)", hint=f"e.g. {eg}")
    bad = [a for a in doctor_args if a in ("--format", "--slurm-drain", "--python") or
           a.startswith(("--format=", "--python="))]
    if bad:
        raise UsageError(f"--doctor-args: {bad[0]} is set by the script itself")
    args = "".join(" " + template.sh(a) for a in doctor_args)
    return template.fill(TEMPLATES / "healthcheck.sh", {
        "VERSION": __version__, "NEURON_ENV": template.sh(neuron_env), "TIMEOUT": str(timeout),
        "PYTHON": template.sh(python), "DOCTOR_ARGS": args})


def render_conf(path: str, interval: int, prolog: bool) -> str:
    template.value("--path", path)
    if not path.startswith("/") or any(c.isspace() for c in path):
        raise UsageError(f"--path {path!r}: an absolute path without spaces")
    if interval < 10:
        raise UsageError(f"--interval {interval}: at least 10 seconds")
    return template.fill(TEMPLATES / "slurm.conf.snippet", {
        "PATH": path, "PATH_SH": template.sh(path), "INTERVAL": str(interval),
        "PROLOG": "" if prolog else "#"})
