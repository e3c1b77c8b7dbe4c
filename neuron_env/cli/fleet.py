"""`neuron-env fleet doctor|report`: flags -> commands.fleet -> the boundary."""


import typer

from neuron_env.cli.app import FleetFmt, app, emit, positive, seconds

fleet_app = typer.Typer(no_args_is_help=True, help="Validate many nodes. Run doctor through SSM "
                        "Run Command, or aggregate doctor reports gathered any way.")
app.add_typer(fleet_app, name="fleet")
SCHEMA = "neuron-env.fleet/1"


@fleet_app.command("doctor")
def doctor(
    targets: str = typer.Option(..., "--targets", help="tag:KEY=VALUE or i-…,i-… (≤ 50 ids)."),
    max_concurrency: str = typer.Option("50", "--max-concurrency", help="N or N% instances "
                                        "at once (SSM rate control)."),
    max_errors: str = typer.Option("0", "--max-errors", help="N or N% errors before SSM stops "
                                   "sending."),
    s3_bucket: str = typer.Option(None, "--s3-bucket", help="Have SSM write full output here "
                                  "(else only 24,000 chars of stdout come back)."),
    s3_prefix: str = typer.Option("neuron-env", "--s3-prefix", help="Key prefix in the bucket."),
    timeout: int = typer.Option(600, "--timeout", callback=positive,
                                help="Execution timeout on each instance (s)."),
    doctor_args: str = typer.Option("", "--doctor-args", help="Extra doctor arguments, one "
                                    "shell-quoted string, e.g. \"--smoke --strict\"."),
    neuron_env: str = typer.Option("neuron-env", "--neuron-env", help="neuron-env on the "
                                   "instances (a path if it is not on PATH)."),
    region: str = typer.Option(None, "--region", help="AWS region (else the environment's)."),
    format: FleetFmt = typer.Option(FleetFmt.text, "--format"),
) -> None:
    """Run `neuron-env doctor --format json` on instances through SSM and aggregate."""
    def produce():
        from neuron_env.commands.fleet import fleet_doctor
        from neuron_env.fleet.ssm import FleetOptions
        from neuron_env.util.template import words

        extra = words("--doctor-args", doctor_args)
        return fleet_doctor(FleetOptions(
            targets=targets, max_concurrency=max_concurrency, max_errors=max_errors,
            s3_bucket=s3_bucket, s3_prefix=s3_prefix, timeout=timeout, doctor_args=extra,
            neuron_env=neuron_env, region=region))

    emit(produce, format.value, SCHEMA)


@fleet_app.command("report")
def report(
    inputs: list[str] = typer.Argument(None, metavar="FILES...|DIR|s3://BUCKET/PREFIX"),
    region: str = typer.Option(None, "--region", help="AWS region for s3:// inputs."),
    format: FleetFmt = typer.Option(FleetFmt.text, "--format"),
    timeout: float = typer.Option(300.0, "--timeout", metavar="SECONDS", callback=seconds,
                                  help="Budget for all s3:// reads; an object not read by "
                                  "then (or within its own 10 s + 1 s/MiB) is unreadable."),
) -> None:
    """Aggregate doctor JSON reports gathered any way (srun, a DaemonSet, SSM output in S3)."""
    def produce():
        from neuron_env.commands.fleet import fleet_report

        return fleet_report(list(inputs or []), region, timeout)

    emit(produce, format.value, SCHEMA)
