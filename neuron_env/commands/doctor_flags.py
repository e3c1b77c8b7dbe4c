"""doctor's flags, by parameter name, as a command line gave them -> DoctorOptions -> the run.

Shared by the typer command (cli/doctor.py, every flag) and entry.py (doctor's common flags,
parsed without typer); neither builds DoctorOptions itself. A flag missing from `flags` takes
DoctorOptions' default, which is typer's (tests/unit/test_entry_doctor.py compares them).
This module imports nothing heavy: the target probe starts before commands.doctor loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neuron_env.boundary import split

# flags that are DoctorOptions fields of the same name and value
SAME = ("matrix", "python", "root", "instance_type", "strict", "aws", "smoke", "collectives",
        "smoke_timeout", "neuron_index_url", "pytorch_index_url", "tag_instance",
        "publish_ssm", "strict_publish", "wait", "all_packages", "expect_efa", "fix",
        "slurm_drain", "verbose")
WAIVER_FLAGS = ("waive", "reason", "until", "waivers_file")


def options(flags: dict[str, Any]) -> dict[str, Any]:
    """DoctorOptions' keyword arguments for the flags given (by parameter name)."""
    kw = {k: flags[k] for k in SAME if k in flags}
    for name in ("only", "skip"):
        if name in flags:
            kw[name] = split(flags[name])
    if "report" in flags:
        kw["reports"] = tuple(flags["report"] or ())
    if any(k in flags for k in WAIVER_FLAGS):
        kw["waivers"] = _waivers(*(flags.get(k) for k in WAIVER_FLAGS))
    if flags.get("smoke"):
        kw["step_lines"] = _step_lines(flags.get("format", "text"))
    return kw


def run(flags: dict[str, Any], confirm: Callable[[list[str]], bool] = lambda commands: False):
    """The doctor run for these flags: the target probe started first (it runs while the rest
    of neuron-env is imported), then commands.doctor.command. Its Report."""
    from neuron_env.probes.facts import start_target

    started = start_target(flags.get("python"))
    from neuron_env.commands.doctor import DoctorOptions, command

    return command(DoctorOptions(**options(flags)), started, confirm=confirm)


def _step_lines(fmt: str) -> bool:
    """--smoke says its steps on stderr as smoke does (text output, or a terminal)."""
    from neuron_env.smoke.live import watched

    return watched(fmt)


def _waivers(waive, reason, until, waivers_file) -> tuple:
    from neuron_env.checks import waivers as w

    found = w.from_flags(split(waive), list(reason or ()), list(until or ()))
    return tuple(found + (w.from_file(waivers_file) if waivers_file else []))
