"""`neuron-env slurm-healthcheck` and `k8s-manifests`: engine integration rendered on stdout."""

import typer

from neuron_env.cli.app import Fmt, app, emit, positive

NEURON_ENV = "/opt/neuron-env/bin/neuron-env"
VENV_PYTHON = "/opt/neuron-venv/bin/python"  # fleet/slurm.py DEFAULT_PYTHON


def _args(value: str) -> list[str]:
    from neuron_env.util.template import words

    return words("--doctor-args", value or "")


@app.command("slurm-healthcheck")
def slurm_healthcheck(
    neuron_env: str = typer.Option(NEURON_ENV, "--neuron-env", help="neuron-env on the nodes."),
    python: str = typer.Option(VENV_PYTHON, "--python", help="The venv jobs run in (default: "
                               "the one neuron-env's user data and AMI component create)."),
    timeout: int = typer.Option(45, "--timeout", callback=positive,
                                help="doctor's limit in seconds (< 60: Slurm "
                                "kills a health check at 60 s)."),
    doctor_args: str = typer.Option("", "--doctor-args", help="Extra doctor arguments."),
    slurm_conf: bool = typer.Option(False, "--slurm-conf", help="Print the slurm.conf snippet "
                                    "instead of the script."),
    path: str = typer.Option("/etc/slurm/neuron-env-healthcheck.sh", "--path", help="Where the "
                             "script is installed (for the snippet)."),
    interval: int = typer.Option(300, "--interval", callback=positive,
                                 help="HealthCheckInterval (s)."),
    prolog: bool = typer.Option(False, "--prolog", help="Also run it as the job Prolog."),
    format: Fmt = typer.Option(Fmt.text, "--format"),
) -> None:
    """Slurm HealthCheckProgram/Prolog script. It drains failing nodes; or --slurm-conf."""
    def produce():
        from neuron_env.commands.fleet import slurm_healthcheck as render

        return render(neuron_env, timeout, _args(doctor_args), slurm_conf, path, interval,
                      prolog, python)

    emit(produce, format.value, "neuron-env.slurm-healthcheck")


@app.command("k8s-manifests")
def k8s_manifests(
    namespace: str = typer.Option("kube-system", "--namespace", help="The namespace."),
    image: str = typer.Option(None, "--image", help="node-problem-detector image."),
    neuron_env: str = typer.Option(NEURON_ENV, "--neuron-env", help="neuron-env on the nodes."),
    interval: int = typer.Option(300, "--interval", callback=positive,
                                 help="How often NPD runs doctor (s)."),
    timeout: int = typer.Option(60, "--timeout", callback=positive,
                                help="NPD's limit on one doctor run (s)."),
    doctor_args: str = typer.Option("", "--doctor-args", help="Extra doctor arguments."),
    format: Fmt = typer.Option(Fmt.text, "--format", help="text: YAML; json: a v1 List."),
) -> None:
    """Kubernetes manifests: NPD config, DaemonSet. For nodes with Neuron devices."""
    def produce():
        from neuron_env.commands.fleet import k8s_manifests as render
        from neuron_env.fleet.k8s import NPD_IMAGE

        return render(namespace=namespace, image=image or NPD_IMAGE, neuron_env=neuron_env,
                      interval=interval, timeout=timeout, doctor_args=_args(doctor_args))

    emit(produce, format.value, "neuron-env.k8s-manifests")
