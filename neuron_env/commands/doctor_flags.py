"""doctor's command line as one typed record (DoctorFlags: its defaults and environment
variables declared here, once) -> DoctorOptions -> the run.

Shared by the typer command (cli/doctor.py, every flag) and entry.py (doctor's common flags,
parsed without typer); neither builds DoctorOptions itself (tests/unit/test_entry_doctor.py
holds the two parsers to the same DoctorOptions).
This module imports nothing heavy: the target probe starts before commands.doctor loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from neuron_env.boundary import split
from neuron_env.util.record import record

# the environment variables of options several commands share (cli/app.py's matrix_option and
# index_option read them here): parameter name -> variable
ENVIRONMENT = {"matrix": "NEURON_ENV_MATRIX", "neuron_index_url": "NEURON_ENV_NEURON_INDEX_URL",
               "pytorch_index_url": "NEURON_ENV_PYTORCH_INDEX_URL"}


@record
class DoctorFlags:
    """doctor's command line, one field per parameter: THE declaration of its defaults (the
    typer options in cli/doctor.py take theirs from DEFAULT; entry.py's fast parser starts
    from them). Both parsers hand `options()` one of these, never a dict of names."""

    matrix: str | None = None  # else $NEURON_ENV_MATRIX (ENVIRONMENT)
    python: str | None = None
    root: str | None = None
    instance_type: str | None = None
    strict: bool = False
    only: tuple[str, ...] = ()  # as given: "a,b" items, split by options()
    skip: tuple[str, ...] = ()
    format: str = "text"
    report: tuple[str, ...] = ()  # --report FORMAT:PATH
    fix: bool = False
    yes: bool = False
    waive: tuple[str, ...] = ()
    reason: tuple[str, ...] = ()
    until: tuple[str, ...] = ()
    waivers_file: str | None = None
    wait: float = 0.0
    list_checks: bool = False
    aws: bool = False
    smoke: bool = False
    smoke_timeout: float = 300.0
    collectives: bool = False
    neuron_index_url: str | None = None  # else $NEURON_ENV_NEURON_INDEX_URL
    pytorch_index_url: str | None = None  # else $NEURON_ENV_PYTORCH_INDEX_URL
    tag_instance: bool = False
    publish_ssm: str | None = None
    strict_publish: bool = False
    verbose: bool = False
    all_packages: bool = False
    expect_efa: bool = False
    slurm_drain: bool = False


DEFAULT = DoctorFlags()
# DoctorFlags fields that are DoctorOptions fields of the same name and value
SAME = ("matrix", "python", "root", "instance_type", "strict", "aws", "smoke", "collectives",
        "smoke_timeout", "neuron_index_url", "pytorch_index_url", "tag_instance",
        "publish_ssm", "strict_publish", "wait", "all_packages", "expect_efa", "fix",
        "slurm_drain", "verbose")


def resolve(given: Mapping[str, Any], environ: Mapping[str, str]) -> DoctorFlags:
    """One precedence cascade (cibuildwheel's options reader): the flag as given, else its
    environment variable (set and not empty), else DoctorFlags' default. Lists come as
    tuples. (typer applies the same cascade through the options' `envvar`, read from
    ENVIRONMENT.)"""
    kw: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    for name, var in ENVIRONMENT.items():
        if kw.get(name) is None and environ.get(var):
            kw[name] = environ[var]
    return DoctorFlags(**kw)


def options(flags: DoctorFlags) -> dict[str, Any]:
    """DoctorOptions' keyword arguments for a command line."""
    kw: dict[str, Any] = {k: getattr(flags, k) for k in SAME}
    kw.update(only=split(list(flags.only)), skip=split(list(flags.skip)),
              reports=tuple(flags.report))
    if flags.waive or flags.reason or flags.until or flags.waivers_file:
        kw["waivers"] = _waivers(flags.waive, flags.reason, flags.until, flags.waivers_file)
    kw["step_lines"] = _step_lines(flags.format) if flags.smoke else False
    return kw


def run(flags: DoctorFlags, confirm: Callable[[list[str]], bool] = lambda commands: False):
    """The doctor run for these flags: the target probe started first (it runs while the rest
    of neuron-env is imported), then commands.doctor.command. Its Report."""
    from neuron_env.probes.facts import start_target

    started = start_target(flags.python)
    from neuron_env.commands.doctor import DoctorOptions, command

    return command(DoctorOptions(**options(flags)), started, confirm=confirm)


def _step_lines(fmt: str) -> bool:
    """--smoke says its steps on stderr as smoke does (text output, or a terminal)."""
    from neuron_env.smoke.live import watched

    return watched(fmt)


def _waivers(waive, reason, until, waivers_file) -> tuple:
    from neuron_env.checks import waivers as w

    found = w.from_flags(split(list(waive)), list(reason or ()), list(until or ()))
    return tuple(found + (w.from_file(waivers_file) if waivers_file else []))
