"""`neuron-env doctor`: flags -> DoctorOptions -> commands.doctor.command -> the boundary
(the CLI parses and asks on a TTY; the command orchestrates)."""

import sys

import typer

from neuron_env.cli.app import (
    DoctorFmt,
    app,
    emit,
    index_option,
    matrix_option,
    python_option,
    report_outputs,
    root_option,
    seconds,
    wait_seconds,
)
from neuron_env.commands.doctor_flags import DEFAULT

D = DEFAULT  # doctor's defaults, declared once (commands/doctor_flags.py)
EXAMPLES = """\b
Examples:
  neuron-env doctor                                  # this host, the default target python
  neuron-env doctor --python ~/venv/bin/python -v    # a training environment, in detail
  neuron-env doctor --fix --yes                      # run the safe fixes, then check again
  neuron-env doctor --format markdown > issue.md     # for a GitHub issue or a support case
  neuron-env doctor --report junit:/tmp/d.xml --report json:/tmp/d.json --wait 120
  neuron-env doctor --waive driver.packages --reason "AMI pins them" --until 2026-12-31
  neuron-env doctor --list-checks --format json"""


def _confirm(commands: list[str], yes: bool) -> bool:
    say = "\n".join(f"  {c}" for c in commands)
    if yes:
        return True
    if not sys.stdin.isatty():
        sys.stderr.write(f"doctor --fix would run:\n{say}\n(no TTY to confirm: pass --yes)\n")
        return False
    sys.stderr.write(f"doctor --fix will run:\n{say}\n")
    return typer.confirm("Run them?", default=False, err=True)


@app.command(epilog=EXAMPLES)
def doctor(
    matrix: str = matrix_option(),
    python: str = python_option("Interpreter of the environment to check (default "
                                "$NEURON_ENV_PYTHON, $VIRTUAL_ENV, python3)."),
    root: str = root_option(),
    instance_type: str = typer.Option(None, "--instance-type", metavar="TYPE", help="The "
                                      "instance type the environment is meant for (assumed)."),
    strict: bool = typer.Option(D.strict, "--strict", help="Warnings fail the run."),
    only: list[str] = typer.Option(None, "--only", metavar="ID,..", help="Run only these "
                                   "check ids/categories."),
    skip: list[str] = typer.Option(None, "--skip", metavar="ID,..", help="Skip these check "
                                   "ids/categories."),
    format: DoctorFmt = typer.Option(D.format, "--format", help="Output on stdout."),
    report: list[str] = typer.Option(None, "--report", callback=report_outputs,
                                     metavar="FORMAT:PATH", help="Also "
                                     "write a report (repeatable), on every exit."),
    fix: bool = typer.Option(D.fix, "--fix", help="Run the fixes that are safe to run (asks on "
                             "a TTY), then check again; print the rest."),
    yes: bool = typer.Option(D.yes, "--yes", "-y", help="With --fix: never ask."),
    waive: list[str] = typer.Option(None, "--waive", metavar="ID", help="Accept this check's "
                                    "problem (needs --reason; recorded in the reports)."),
    reason: list[str] = typer.Option(None, "--reason", metavar="TEXT", help="With --waive: "
                                     "why it is waived."),
    until: list[str] = typer.Option(None, "--until", metavar="YYYY-MM-DD", help="With --waive: "
                                    "the waiver expires after this date (loudly)."),
    waivers_file: str = typer.Option(None, "--waivers", metavar="FILE", help="TOML file of "
                                     "[[waiver]] id/reason/until."),
    wait: float = typer.Option(D.wait, "--wait", callback=wait_seconds,
                               metavar="SECONDS", min=0, help="Re-check while "
                               "something fails, up to SECONDS (first boot)."),
    list_checks: bool = typer.Option(D.list_checks, "--list-checks", help="List every check and "
                                     "exit."),
    aws: bool = typer.Option(D.aws, "--aws", help="Compare with EC2 DescribeInstanceTypes."),
    smoke: bool = typer.Option(D.smoke, "--smoke", help="Also run the device smoke test "
                               "(smoke.device)."),
    smoke_timeout: float = typer.Option(D.smoke_timeout, "--smoke-timeout", metavar="SECONDS",
                                        callback=seconds, help="With --smoke: its hard "
                                        "limit."),
    collectives: bool = typer.Option(D.collectives, "--collectives", help="With --smoke: also "
                                     "a short all_reduce across the local devices "
                                     "(collectives.all_reduce)."),
    neuron_index_url: str = index_option("neuron", from_env=True),
    pytorch_index_url: str = index_option("pytorch", from_env=True),
    tag_instance: bool = typer.Option(D.tag_instance, "--tag-instance", help="Write the status and "
                                      "neuron-env version as EC2 tags on this instance."),
    publish_ssm: str = typer.Option(None, "--publish-ssm", metavar="NAME", help="Write the "
                                    "JSON summary to this SSM parameter."),
    strict_publish: bool = typer.Option(D.strict_publish, "--strict-publish", help="With "
                                        "--tag-instance or --publish-ssm: a failure to publish "
                                        "fails the run."),
    verbose: bool = typer.Option(D.verbose, "-v", "--verbose", help="Show observed/expected too."),
    all_packages: bool = typer.Option(D.all_packages, "--all-packages", help="List every "
                                      "distribution in target.packages (default: all up to "
                                      "64, else the Neuron/torch ones)."),
    expect_efa: bool = typer.Option(D.expect_efa, "--expect-efa/--no-expect-efa", help="This host "
                                    "runs multi-node jobs: a missing EFA fails net.efa "
                                    "(otherwise a warning; a Slurm job on more than one node "
                                    "implies it)."),
    slurm_drain: bool = typer.Option(D.slurm_drain, "--slurm-drain", help="Drain this Slurm node "
                                     "(scontrol) when doctor fails; resume it when it passes."),
) -> None:
    """Check this host against the version matrix. The environment, driver and devices too."""
    from neuron_env.commands import doctor_flags

    flags = doctor_flags.DoctorFlags(  # the command line as one typed record (no dict of names)
        matrix=matrix, python=python, root=root, instance_type=instance_type, strict=strict,
        only=tuple(only or ()), skip=tuple(skip or ()), format=format.value,
        report=tuple(report or ()), fix=fix, yes=yes, waive=tuple(waive or ()),
        reason=tuple(reason or ()), until=tuple(until or ()), waivers_file=waivers_file,
        wait=wait, list_checks=list_checks, aws=aws, smoke=smoke, smoke_timeout=smoke_timeout,
        collectives=collectives, neuron_index_url=neuron_index_url,
        pytorch_index_url=pytorch_index_url, tag_instance=tag_instance, publish_ssm=publish_ssm,
        strict_publish=strict_publish, verbose=verbose, all_packages=all_packages,
        expect_efa=expect_efa, slurm_drain=slurm_drain)
    if flags.list_checks:
        from neuron_env.commands import list_checks as lc

        emit(lambda: lc.run(flags.matrix), flags.format, lc.SCHEMA)

    def produce():
        return doctor_flags.run(flags, confirm=lambda commands: _confirm(commands, flags.yes))

    emit(produce, flags.format, "neuron-env.doctor/1", verbose=flags.verbose,
         reports=flags.report)
