"""`neuron-env userdata` and `neuron-env imagebuilder-component`: rendered scripts on stdout."""

import typer

from neuron_env.cli.app import Fmt, app, count, emit, index_option, wait_seconds


def index_from_option(which: str):
    return typer.Option(None, f"--{which}-index-url-from", help=f"Read the {which} index URL "
                        "on the instance at boot instead of writing it into the script: "
                        "ssm:/PARAMETER (SecureString; needs the aws CLI and ssm:GetParameter) "
                        "or env:VAR.")


SOURCE_HELP = ("Required. How to install neuron-env itself (it is not on the public index): a "
               "wheelhouse directory, a wheel (path, https:// or s3:// URL; with "
               "--source-sha256), or a pip spec from --source-index-url.")


def sha_option():
    return typer.Option(None, "--source-sha256", help="The wheel's sha256 (checked before "
                        "pip installs it).")


def source_index_option():
    return typer.Option(None, "--source-index-url", help="Your own index serving neuron-env "
                        "(and its dependencies).")


def args_option(what: str):
    return typer.Option(None, f"--{what}-args", help=f"Extra {what} arguments (words).")


def _rendered(kind: str, **kw):
    """A Document whose text view is the rendered script (options left unset take defaults)."""
    from neuron_env.bootstrap import userdata as boot
    from neuron_env.report.envelope import envelope
    from neuron_env.report.model import Document

    opts = boot.BootstrapOptions(**{k: v for k, v in kw.items() if v is not None})
    text = boot.userdata(opts) if kind == "userdata" else boot.component(opts)
    return Document(envelope(f"neuron-env.{kind}/1", 0, script=text), lambda b: b["script"])


@app.command()
def userdata(
    source: str = typer.Option(None, "--source", help=SOURCE_HELP),
    source_sha256: str = sha_option(),
    source_index_url: str = source_index_option(),
    venv: str = typer.Option(None, "--venv", help="Target venv (default /opt/neuron-venv)."),
    tool_venv: str = typer.Option(None, "--tool-venv", help="neuron-env's own venv."),
    torch: str = typer.Option(None, "--torch", help="2.14 or 2.13 (default: newest)."),
    backend: str = typer.Option(None, "--backend", help="neuron or emulated."),
    python: str = typer.Option(None, "--python", help="Base interpreter on the instance."),
    log_dir: str = typer.Option(None, "--log-dir", help="Reports go here "
                                "(default /var/log/neuron-env)."),
    smoke: bool = typer.Option(True, "--smoke/--no-smoke", help="Run the device smoke test."),
    retries: int = typer.Option(None, "--retries", callback=count,
                                help="Attempts for network steps."),
    neuron_index_url: str = index_option("neuron", from_env=False),
    pytorch_index_url: str = index_option("pytorch", from_env=False),
    neuron_index_from: str = index_from_option("neuron"),
    pytorch_index_from: str = index_from_option("pytorch"),
    doctor_args: str = typer.Option(None, "--doctor-args", help="Extra doctor arguments, e.g. "
                                    "'--tag-instance --publish-ssm /ami/neuron'."),
    install_args: str = args_option("install"),
    wait: int = typer.Option(None, "--wait", callback=wait_seconds, help="doctor --wait at "
                             "first boot while the driver loads (default 120; 0: none)."),
    format: Fmt = typer.Option(Fmt.text, "--format", help="text: the script; json: it in a "
                               "document."),
) -> None:
    """Cloud-init user-data script on stdout. It installs, validates, leaves a report."""
    emit(lambda: _rendered(
        "userdata", source=source, venv=venv, tool_venv=tool_venv, torch=torch,
        backend=backend, python=python, log_dir=log_dir, smoke=smoke, retries=retries,
        neuron_index_url=neuron_index_url, pytorch_index_url=pytorch_index_url,
        neuron_index_from=neuron_index_from, pytorch_index_from=pytorch_index_from,
        doctor_args=doctor_args, install_args=install_args, wait=wait,
        source_sha256=source_sha256, source_index_url=source_index_url), format.value,
        "neuron-env.userdata/1")


@app.command("imagebuilder-component")
def imagebuilder_component(
    source: str = typer.Option(None, "--source", help=SOURCE_HELP),
    source_sha256: str = sha_option(),
    source_index_url: str = source_index_option(),
    venv: str = typer.Option(None, "--venv", help="Target venv (as userdata's)."),
    tool_venv: str = typer.Option(None, "--tool-venv", help="neuron-env's own venv."),
    torch: str = typer.Option(None, "--torch", help="The torch pair (default: newest)."),
    backend: str = typer.Option(None, "--backend", help="neuron or emulated."),
    python: str = typer.Option(None, "--python", help="Base interpreter on the image."),
    log_dir: str = typer.Option(None, "--log-dir", help="Reports go here."),
    instance_type: str = typer.Option(None, "--instance-type", help="The type the image "
                                      "targets (validate runs on the build instance)."),
    neuron_index_url: str = index_option("neuron", from_env=False),
    pytorch_index_url: str = index_option("pytorch", from_env=False),
    neuron_index_from: str = index_from_option("neuron"),
    pytorch_index_from: str = index_from_option("pytorch"),
    install_args: str = args_option("install"),
    doctor_args: str = args_option("doctor"),
    smoke: bool = typer.Option(True, "--smoke/--no-smoke", help="The test phase runs the "
                               "device smoke test."),
    format: Fmt = typer.Option(Fmt.text, "--format", help="text: the YAML; json: it in a "
                               "document."),
) -> None:
    """EC2 Image Builder component on stdout. YAML: build, validate, test phases."""
    emit(lambda: _rendered(
        "component", source=source, venv=venv, tool_venv=tool_venv, torch=torch,
        backend=backend, python=python, log_dir=log_dir, instance_type=instance_type,
        neuron_index_url=neuron_index_url, pytorch_index_url=pytorch_index_url,
        neuron_index_from=neuron_index_from, pytorch_index_from=pytorch_index_from,
        install_args=install_args, doctor_args=doctor_args, smoke=smoke,
        source_sha256=source_sha256, source_index_url=source_index_url), format.value,
        "neuron-env.component/1")
