"""`doctor --fix`: run the fix lines that are safe to run (no sudo; they change the target
environment only), after a confirmation on a TTY or with --yes; print the rest."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

from neuron_env.guards import proc
from neuron_env.report.model import Report

FIX_TIMEOUT = 3600.0  # an install may download gigabytes


def split(rep: Report) -> tuple[list, list]:
    """(safe to run, to do by hand): the problems that have a fix command."""
    todo = [r for r in rep.results if r.status in ("fail", "warn", "error") and r.fix_command]
    seen, safe = set(), []
    for r in todo:
        if r.fix_safe and r.fix_command not in seen:  # one install fixes several checks
            seen.add(r.fix_command)
            safe.append(r)
    return safe, [r for r in todo if not r.fix_safe]


def _argv(command: str) -> list[str]:
    if command.startswith("neuron-env ") and shutil.which("neuron-env") is None:
        command = f"{sys.executable} -m neuron_env " + command[len("neuron-env "):]
    return ["bash", "-c", command]


def apply(rep: Report, confirm: Callable[[list[str]], bool],
          say: Callable[[str], object]) -> list[dict]:
    """Run the safe fixes `confirm` agrees to; what ran, how it ended, and what was left."""
    safe, manual = split(rep)
    out = [{"id": r.id, "command": r.fix_command, "ran": False, "exit_code": None,
            "why": "needs sudo or a host change: run it yourself"} for r in manual]
    if not safe:
        return out
    if not confirm([r.fix_command for r in safe]):
        return out + [{"id": r.id, "command": r.fix_command, "ran": False, "exit_code": None,
                       "why": "not confirmed (--yes runs it)"} for r in safe]
    for r in safe:
        say(f"fix {r.id}: {r.fix_command}")
        res = proc.run(_argv(r.fix_command), timeout=FIX_TIMEOUT)
        if res.returncode != 0:
            say(res.tail(2000) or f"(exit {res.returncode})")
        out.append({"id": r.id, "command": r.fix_command, "ran": True,
                    "exit_code": res.returncode, "why": None})
    return out
