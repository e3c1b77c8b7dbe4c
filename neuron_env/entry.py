"""The `neuron-env` console entry: doctor's common command lines without importing typer.

Importing typer and building its click command is ~35 ms of CPU, more than everything doctor
itself does on a host (docs/benchmarks.md); doctor is the command that runs most (first boot,
Slurm health checks, node-problem-detector, CI). So `main()` first asks `parse_doctor` whether
the command line is `doctor` with only the flags below, each given at most once in a plain form;
if so it runs the same producer (commands/doctor_flags.run) through the same boundary
(boundary.run) as the typer command does. Anything else — another command, --help, a flag not
listed here, a repeated or odd-looking value, a typo — returns None, and the typer app parses
it, its messages and exit codes included. The accepted flags have no partner options
(cli/requires.py) and no callbacks. tests/unit/test_entry_doctor.py holds both parsers to the
same DoctorOptions for every accepted flag, environment variable and default, and fails when
doctor gains a flag this table does not place.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from neuron_env.commands.doctor_flags import ENVIRONMENT as SHARED_ENVIRONMENT
from neuron_env.commands.doctor_flags import DoctorFlags, resolve
from neuron_env.report.formats import DOCTOR, offered_by

SCHEMA = "neuron-env.doctor/1"
FORMATS = offered_by(DOCTOR)  # THE format table (report/formats.py), as cli.app.DoctorFmt
# flag -> parameter name, for flags that take one value
VALUES = {"--matrix": "matrix", "--python": "python", "--root": "root",
          "--instance-type": "instance_type", "--format": "format",
          "--neuron-index-url": "neuron_index_url", "--pytorch-index-url": "pytorch_index_url"}
REPEATED = {"--only": "only", "--skip": "skip"}  # flags that take one value each time
SWITCHES = {"--strict": ("strict", True), "-v": ("verbose", True), "--verbose": ("verbose", True),
            "--all-packages": ("all_packages", True), "--expect-efa": ("expect_efa", True),
            "--no-expect-efa": ("expect_efa", False)}
# parameter -> its environment variable (declared in commands/doctor_flags.py, as typer's
# envvar=; read when the flag is not given)
ENVIRONMENT = {k: v for k, v in SHARED_ENVIRONMENT.items() if k in (*VALUES.values(),)}


def parse_doctor(argv: Sequence[str], environ: Mapping[str, str]) -> DoctorFlags | None:
    """doctor's command line as DoctorFlags (the flags given, then the one precedence cascade:
    environment variables, defaults), or None when the typer app must parse it."""
    if not argv or argv[0] != "doctor":
        return None
    flags: dict[str, Any] = {}
    seen: set[str] = set()
    rest = list(argv[1:])
    while rest:
        token = rest.pop(0)
        flag, eq, value = token.partition("=")
        if flag in SWITCHES and not eq:
            name, on = SWITCHES[flag]
            if name in seen:
                return None
            seen.add(name)
            flags[name] = on
            continue
        param = VALUES.get(flag) or REPEATED.get(flag)
        if param is None:
            return None  # --help, another flag, a positional argument, `--`, `-vy`
        if not eq:
            if not rest:
                return None  # the value is missing: typer says so
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None  # empty, or a flag where a value should be: typer decides
        if flag in REPEATED:
            flags.setdefault(param, []).append(value)
        elif param in seen:
            return None  # given twice
        else:
            seen.add(param)
            flags[param] = value
    if flags.get("format", "text") not in FORMATS:
        return None  # typer names the choices
    return resolve(flags, environ)


def run_doctor(flags: DoctorFlags) -> int:
    """doctor for flags from parse_doctor, through the boundary; the exit code."""
    from neuron_env import boundary
    from neuron_env.commands import doctor_flags

    return boundary.run(lambda: doctor_flags.run(flags), flags.format, SCHEMA,
                        verbose=flags.verbose)


def main() -> None:
    flags = parse_doctor(sys.argv[1:], os.environ)
    if flags is None:
        from neuron_env.cli import main as typer_main

        typer_main()
        return
    import gc

    from neuron_env import boundary

    boundary.sigterm_interrupts()
    try:
        code = run_doctor(flags)
    except KeyboardInterrupt:  # between the boundary's steps
        sys.stderr.write("neuron-env: interrupted\n")
        code = 130
    gc.freeze()  # exiting: the interpreter's last collections need not walk what the run made
    sys.exit(code)
