"""`neuron-env doctor`: flags -> DoctorOptions -> commands.doctor.run -> the boundary."""

from __future__ import annotations

import typer

from neuron_env.cli.app import (
    DoctorFmt,
    app,
    emit,
    index_option,
    matrix_option,
    python_option,
    root_option,
    split,
)


@app.command()
def doctor(
    matrix: str = matrix_option(),
    python: str = python_option("Interpreter of the environment to check (default "
                                "$NEURON_ENV_PYTHON, $VIRTUAL_ENV, python3)."),
    root: str = root_option(),
    instance_type: str = typer.Option(None, "--instance-type", help="The instance type the "
                                      "environment is meant for (reported as assumed)."),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail the run."),
    only: list[str] = typer.Option(None, "--only", help="Run only these check ids/categories."),
    skip: list[str] = typer.Option(None, "--skip", help="Skip these check ids/categories."),
    format: DoctorFmt = typer.Option(DoctorFmt.text, "--format"),
    report: list[str] = typer.Option(None, "--report", help="Also write FORMAT:PATH "
                                     "(repeatable), e.g. junit:/tmp/doctor.xml."),
    aws: bool = typer.Option(False, "--aws", help="Compare with EC2 DescribeInstanceTypes."),
    smoke: bool = typer.Option(False, "--smoke", help="Also run the device smoke test "
                               "(smoke.device)."),
    smoke_timeout: float = typer.Option(300.0, "--smoke-timeout", help="Its hard limit (s)."),
    neuron_index_url: str = index_option("neuron", from_env=True),
    pytorch_index_url: str = index_option("pytorch", from_env=True),
    tag_instance: bool = typer.Option(False, "--tag-instance", help="Write the status and "
                                      "neuron-env version as EC2 tags on this instance."),
    publish_ssm: str = typer.Option(None, "--publish-ssm", metavar="NAME", help="Write the "
                                    "JSON summary to this SSM parameter."),
    strict_publish: bool = typer.Option(False, "--strict-publish", help="A failed "
                                        "--tag-instance/--publish-ssm fails the run."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show observed/expected too."),
    all_packages: bool = typer.Option(False, "--all-packages", help="List every distribution "
                                      "in target.packages (default: all up to 64, else the "
                                      "Neuron/torch ones)."),
    slurm_drain: bool = typer.Option(False, "--slurm-drain", help="Drain this Slurm node "
                                     "(scontrol) when doctor fails; resume it when it passes."),
) -> None:
    """Check this host (or --root image) and environment against the version matrix."""
    def produce():
        # start the target probe first: it runs while the rest of neuron-env is imported
        from neuron_env.probes.interpreter import start_probe

        started = start_probe(python)
        from neuron_env.commands.doctor import DoctorOptions, run, write_reports

        rep = run(DoctorOptions(
            matrix=matrix, python=python, root=root, instance_type=instance_type,
            only=split(only), skip=split(skip), strict=strict, aws=aws, smoke=smoke,
            smoke_timeout=smoke_timeout, neuron_index_url=neuron_index_url,
            pytorch_index_url=pytorch_index_url, tag_instance=tag_instance,
            publish_ssm=publish_ssm, strict_publish=strict_publish, reports=tuple(report or ()),
            all_packages=all_packages),
            started=started)
        if slurm_drain:
            from neuron_env.fleet.slurm import drain_or_resume

            rep = drain_or_resume(rep)
        write_reports(rep, tuple(report or ()), verbose)
        return rep

    emit(produce, format.value, "neuron-env.doctor/1", verbose=verbose)
