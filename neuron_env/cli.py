"""The typer app: parse, call a command, render, exit. Nothing else lives here."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path

import typer

from neuron_env import __version__
from neuron_env.errors import EXIT_INTERNAL, NeuronEnvError
from neuron_env.util import redact

app = typer.Typer(
    name="neuron-env", no_args_is_help=True, add_completion=False,
    help="Check, install and smoke-test the AWS Neuron (TorchNeuron) PyTorch backend.",
    pretty_exceptions_enable=False, rich_markup_mode=None,
)
matrix_app = typer.Typer(no_args_is_help=True, help="The version matrices: list, show, "
                         "validate, import.")
app.add_typer(matrix_app, name="matrix")


class Fmt(str, Enum):
    text = "text"
    json = "json"


class DoctorFmt(str, Enum):
    text = "text"
    json = "json"
    junit = "junit"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"neuron-env {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """neuron-env: is this host ready for PyTorch on Trainium?"""


def _fail(err: BaseException, fmt: str, schema: str) -> None:
    """Report an error the way the chosen format speaks, then exit with its code."""
    from neuron_env.commands import TOOL

    if isinstance(err, NeuronEnvError):
        code, payload, text = err.exit_code, err.to_dict(), err.render()
    else:
        import traceback

        code = EXIT_INTERNAL
        tb = traceback.format_exc()
        payload = {"code": "internal", "message": f"{type(err).__name__}: {err}",
                   "hint": "this is a neuron-env bug: please report it", "traceback": tb}
        text = f"internal error: {type(err).__name__}: {err}\n{tb}"
    if fmt in ("json",):
        doc = {"schema": schema, "tool": TOOL, "error": payload, "results": [],
               "summary": {"pass": 0, "warn": 0, "fail": 0, "skip": 0, "error": 1},
               "exit_code": code}
        sys.stdout.write(redact.text(json.dumps(doc, indent=2)) + "\n")
    sys.stderr.write(redact.text(f"neuron-env: {text}\n"))
    raise typer.Exit(code)


def _split(values: list[str] | None) -> list[str]:
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


# -- matrix ---------------------------------------------------------------------------------
MATRIX_DIR = typer.Option(None, "--matrix-dir", help="Also read neuron-<release>.toml from DIR "
                          "(repeatable).")


@matrix_app.command("list")
def matrix_list(matrix_dir: list[Path] = MATRIX_DIR,
                format: Fmt = typer.Option(Fmt.text, "--format")) -> None:
    """List the bundled matrices (and those in --matrix-dir)."""
    from neuron_env.commands import matrix_cmd

    try:
        if format == Fmt.json:
            typer.echo(json.dumps(matrix_cmd.list_data(matrix_dir or []), indent=2))
        else:
            typer.echo(matrix_cmd.list_text(matrix_dir or []), nl=False)
    except Exception as e:
        _fail(e, format.value, "neuron-env.matrix-list/1")


@matrix_app.command("show")
def matrix_show(release: str = typer.Argument(None, help="A release (2.33, 2.31) or a TOML "
                                               "file; default the newest."),
                format: Fmt = typer.Option(Fmt.text, "--format"),
                matrix_dir: list[Path] = MATRIX_DIR) -> None:
    """Show one release's matrix as a table or as neuron-env.matrix/1 JSON."""
    from neuron_env.commands import matrix_cmd
    from neuron_env.matrix import catalog

    try:
        m = catalog.select(release, matrix_dir or [])
        if format == Fmt.json:
            typer.echo(json.dumps(matrix_cmd.show_data(m), indent=2))
        else:
            typer.echo(matrix_cmd.show_text(m), nl=False)
    except Exception as e:
        _fail(e, format.value, "neuron-env.matrix/1")


@matrix_app.command("validate")
def matrix_validate(paths: list[Path] = typer.Argument(..., help="Matrix files or directories."),
                    format: Fmt = typer.Option(Fmt.text, "--format")) -> None:
    """Validate matrix files: exit 0 when all are valid, 2 otherwise (every problem listed)."""
    from neuron_env.commands import TOOL, matrix_cmd

    try:
        results, code = matrix_cmd.validate(paths)
    except Exception as e:
        _fail(e, format.value, "neuron-env.matrix-validate/1")
    if format == Fmt.json:
        typer.echo(json.dumps({"schema": "neuron-env.matrix-validate/1", "tool": TOOL,
                               "files": results, "exit_code": code}, indent=2))
    else:
        typer.echo(matrix_cmd.validate_text(results), nl=False)
    raise typer.Exit(code)


@matrix_app.command("import")
def matrix_import(manifest: Path = typer.Argument(..., help="AWS's n2-manifest.json."),
                  out: Path = typer.Option(Path("matrices"), "--out", help="Directory to write "
                                           "neuron-<release>.toml files into."),
                  release: list[str] = typer.Option(None, "--release", help="Only these "
                                                    "releases (2.31.1, or 2.31 for all 2.31.x)."),
                  dry_run: bool = typer.Option(False, "--dry-run")) -> None:
    """Turn AWS's release manifest into matrix files for the XLA-based releases."""
    from neuron_env.commands import matrix_cmd

    try:
        written, skipped = matrix_cmd.import_manifest(manifest, out, _split(release), dry_run)
    except Exception as e:
        _fail(e, "text", "neuron-env.matrix-import/1")
    verb = "would write" if dry_run else "wrote"
    for w in written:
        typer.echo(f"{verb} {w}")
    for rel, why in skipped:
        typer.echo(f"skipped {rel}: {why}")
    typer.echo(f"{verb} {len(written)} matri{'x' if len(written) == 1 else 'ces'}, "
               f"skipped {len(skipped)} release(s)")


# -- doctor ---------------------------------------------------------------------------------
@app.command()
def doctor(
    matrix: str = typer.Option(None, "--matrix", envvar="NEURON_ENV_MATRIX",
                               help="A bundled release (2.33) or a TOML file/directory."),
    python: str = typer.Option(None, "--python", help="Interpreter of the environment to check "
                               "(default $NEURON_ENV_PYTHON, $VIRTUAL_ENV, python3)."),
    root: str = typer.Option(None, "--root", help="Read host files under DIR (a mounted image)."),
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
    neuron_index_url: str = typer.Option(None, "--neuron-index-url",
                                         envvar="NEURON_ENV_NEURON_INDEX_URL"),
    pytorch_index_url: str = typer.Option(None, "--pytorch-index-url",
                                          envvar="NEURON_ENV_PYTORCH_INDEX_URL"),
    tag_instance: bool = typer.Option(False, "--tag-instance", help="Write the status and "
                                      "neuron-env version as EC2 tags on this instance."),
    publish_ssm: str = typer.Option(None, "--publish-ssm", metavar="NAME", help="Write the "
                                    "JSON summary to this SSM parameter."),
    strict_publish: bool = typer.Option(False, "--strict-publish", help="A failed "
                                        "--tag-instance/--publish-ssm fails the run."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show observed/expected too."),
) -> None:
    """Check this host (or --root image) and environment against the version matrix."""
    schema = "neuron-env.doctor/1"
    try:
        # start the target probe first: it runs while the rest of neuron-env is imported
        from neuron_env.probes.interpreter import start_probe

        started = start_probe(python)
        from neuron_env.commands.doctor import DoctorOptions, run
        from neuron_env.report.render import parse_report_specs, render, write_atomic
        from neuron_env.report.text import use_colour

        reports = parse_report_specs(report or [])
        rep = run(DoctorOptions(matrix=matrix, python=python, root=root,
                                instance_type=instance_type, only=_split(only),
                                skip=_split(skip), strict=strict, aws=aws, smoke=smoke,
                                smoke_timeout=smoke_timeout,
                                neuron_index_url=neuron_index_url,
                                pytorch_index_url=pytorch_index_url,
                                tag_instance=tag_instance, publish_ssm=publish_ssm,
                                strict_publish=strict_publish), started=started)
        for fmt, path in reports:
            try:
                write_atomic(path, render(rep, fmt, verbose=verbose))
            except OSError as e:
                from neuron_env.errors import ConfigurationError

                raise ConfigurationError(f"--report {fmt}:{path}: cannot write: "
                                         f"{e.strerror or e}") from None
    except Exception as e:
        _fail(e, format.value, schema)
    sys.stdout.write(render(rep, format.value, verbose=verbose, colour=use_colour()))
    raise typer.Exit(rep.exit_code)


# -- install --------------------------------------------------------------------------------
@app.command()
def install(
    matrix: str = typer.Option(None, "--matrix", envvar="NEURON_ENV_MATRIX",
                               help="A bundled release (2.33) or a TOML file."),
    python: str = typer.Option(None, "--python", help="Interpreter of the environment to "
                               "install into (or to create --venv with)."),
    root: str = typer.Option(None, "--root", help="Read host files (OS) under DIR."),
    torch: str = typer.Option(None, "--torch", help="The torch pair: 2.14 or 2.13 (default: "
                              "the newest for the target's Python)."),
    backend: str = typer.Option("neuron", "--backend", help="neuron (torch-neuronx) or "
                                "emulated (the CPU-emulated device shipped with neuron-env)."),
    venv: str = typer.Option(None, "--venv", help="Install into this venv; created (with "
                             "--python) when it does not exist."),
    installer: str = typer.Option(None, "--installer", help="pip or uv (default: uv where "
                                  "installed, else pip). Resolution always uses pip --report."),
    find_links: list[str] = typer.Option(None, "--find-links", help="A wheelhouse directory "
                                         "(repeatable)."),
    offline: bool = typer.Option(False, "--offline", help="No index: only --find-links."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; change nothing."),
    force: bool = typer.Option(False, "--force", help="Install even where the matrix says the "
                               "Python/OS/architecture is unsupported (said loudly)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Never prompt."),
    format: Fmt = typer.Option(Fmt.text, "--format"),
    neuron_index_url: str = typer.Option(None, "--neuron-index-url", help="Mirror of the "
                                         "Neuron index (else $NEURON_ENV_NEURON_INDEX_URL)."),
    pytorch_index_url: str = typer.Option(None, "--pytorch-index-url", help="Mirror of the "
                                          "PyTorch CPU index (else "
                                          "$NEURON_ENV_PYTORCH_INDEX_URL)."),
    timeout: float = typer.Option(1800.0, "--timeout", help="Limit per installer step (s)."),
    lock_timeout: float = typer.Option(900.0, "--lock-timeout", help="How long to wait for "
                                       "another install into the same environment (s)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Install the matching backend into a target environment, from the right indexes."""
    from neuron_env.commands.install import SCHEMA, InstallOptions, render_text
    from neuron_env.commands.install import run as run_install
    from neuron_env.report.render import render
    from neuron_env.report.text import use_colour

    try:
        rep = run_install(InstallOptions(
            matrix=matrix, python=python, root=root, torch=torch, backend=backend, venv=venv,
            installer=installer, find_links=tuple(find_links or ()), offline=offline,
            dry_run=dry_run, force=force, yes=yes, neuron_index_url=neuron_index_url,
            pytorch_index_url=pytorch_index_url, timeout=timeout, lock_timeout=lock_timeout,
            quiet=quiet))
    except KeyboardInterrupt:
        sys.stderr.write("neuron-env: install interrupted; nothing more was changed (an "
                         "install already under way is marked incomplete: re-run to repair)\n")
        raise typer.Exit(130) from None
    except Exception as e:
        _fail(e, format.value, SCHEMA)
    if format == Fmt.json:
        sys.stdout.write(render(rep, "json"))
    else:
        sys.stdout.write(render_text(rep, verbose=verbose, colour=use_colour()))
    raise typer.Exit(rep.exit_code)


# -- scripts and instance facts -------------------------------------------------------------
def _bootstrap_options(**kw):
    from neuron_env.bootstrap.render import BootstrapOptions

    return BootstrapOptions(**{k: v for k, v in kw.items() if v is not None})


SOURCE_HELP = ("How to install neuron-env itself: a pip spec (neuron-env==X), a wheel URL, or a "
               "wheelhouse directory (default: this version from the public index).")


@app.command()
def userdata(
    source: str = typer.Option(None, "--source", help=SOURCE_HELP),
    venv: str = typer.Option(None, "--venv", help="Target venv (default /opt/neuron-venv)."),
    tool_venv: str = typer.Option(None, "--tool-venv", help="neuron-env's own venv."),
    torch: str = typer.Option(None, "--torch", help="2.14 or 2.13 (default: newest)."),
    backend: str = typer.Option(None, "--backend", help="neuron or emulated."),
    python: str = typer.Option(None, "--python", help="Base interpreter on the instance."),
    log_dir: str = typer.Option(None, "--log-dir", help="Reports go here "
                                "(default /var/log/neuron-env)."),
    smoke: bool = typer.Option(True, "--smoke/--no-smoke", help="Run the device smoke test."),
    retries: int = typer.Option(None, "--retries", help="Attempts for network steps."),
    neuron_index_url: str = typer.Option(None, "--neuron-index-url"),
    pytorch_index_url: str = typer.Option(None, "--pytorch-index-url"),
    doctor_args: str = typer.Option(None, "--doctor-args", help="Extra doctor arguments, e.g. "
                                    "'--tag-instance --publish-ssm /ami/neuron'."),
) -> None:
    """A cloud-init user-data script (bash) on stdout: install, validate, leave a report."""
    from neuron_env.bootstrap.render import userdata as render_userdata

    try:
        sys.stdout.write(render_userdata(_bootstrap_options(
            source=source, venv=venv, tool_venv=tool_venv, torch=torch, backend=backend,
            python=python, log_dir=log_dir, smoke=smoke, retries=retries,
            neuron_index_url=neuron_index_url, pytorch_index_url=pytorch_index_url,
            doctor_args=doctor_args)))
    except Exception as e:
        _fail(e, "text", "neuron-env.userdata/1")


@app.command("imagebuilder-component")
def imagebuilder_component(
    source: str = typer.Option(None, "--source", help=SOURCE_HELP),
    venv: str = typer.Option(None, "--venv"),
    tool_venv: str = typer.Option(None, "--tool-venv"),
    torch: str = typer.Option(None, "--torch"),
    backend: str = typer.Option(None, "--backend"),
    python: str = typer.Option(None, "--python"),
    log_dir: str = typer.Option(None, "--log-dir"),
    instance_type: str = typer.Option(None, "--instance-type", help="The type the image "
                                      "targets (validate runs on the build instance)."),
    neuron_index_url: str = typer.Option(None, "--neuron-index-url"),
    pytorch_index_url: str = typer.Option(None, "--pytorch-index-url"),
) -> None:
    """An EC2 Image Builder component (YAML) on stdout: build, validate, test phases."""
    from neuron_env.bootstrap.render import component

    try:
        sys.stdout.write(component(_bootstrap_options(
            source=source, venv=venv, tool_venv=tool_venv, torch=torch, backend=backend,
            python=python, log_dir=log_dir, instance_type=instance_type,
            neuron_index_url=neuron_index_url, pytorch_index_url=pytorch_index_url)))
    except Exception as e:
        _fail(e, "text", "neuron-env.component/1")


@app.command()
def instance(
    type_: str = typer.Argument(None, metavar="[TYPE]", help="e.g. trn2.48xlarge (default: "
                                "this instance)."),
    matrix: str = typer.Option(None, "--matrix", envvar="NEURON_ENV_MATRIX"),
    aws: bool = typer.Option(False, "--aws", help="Also EC2 DescribeInstanceTypes' NeuronInfo."),
    dlami: str = typer.Option(None, "--dlami", metavar="OS", help="The Neuron DLAMI image id "
                              "for OS (ubuntu-24.04) from the public SSM parameters."),
    root: str = typer.Option(None, "--root"),
    format: Fmt = typer.Option(Fmt.text, "--format"),
) -> None:
    """The Neuron facts of an instance type: devices, cores, memory; EC2's view; the DLAMI."""
    from neuron_env.commands import instance as cmd

    try:
        doc = cmd.run(type_, matrix, aws, dlami, root)
    except Exception as e:
        _fail(e, format.value, cmd.SCHEMA)
    if format == Fmt.json:
        typer.echo(json.dumps(doc, indent=2))
    else:
        typer.echo(cmd.text(doc), nl=False)


# -- smoke ----------------------------------------------------------------------------------
@app.command()
def smoke(
    python: str = typer.Option(None, "--python", help="Interpreter of the environment to test."),
    device: str = typer.Option("neuron", "--device", help="neuron, cpu or cuda."),
    size: int = typer.Option(1024, "--size", help="Matmul size N (N x N)."),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or bfloat16."),
    rtol: float = typer.Option(None, "--rtol", help="Override the dtype's relative tolerance."),
    atol: float = typer.Option(None, "--atol", help="Override the dtype's absolute tolerance."),
    iterations: int = typer.Option(10, "--iterations", help="Steady-state iterations."),
    backward: bool = typer.Option(False, "--backward", help="Also an MLP training step."),
    compile: bool = typer.Option(False, "--compile", help="Also the MLP under torch.compile."),
    no_fallback: bool = typer.Option(False, "--no-fallback", help="A CPU fallback fails."),
    timeout: float = typer.Option(300.0, "--timeout", help="Hard limit for the whole run (s)."),
    format: Fmt = typer.Option(Fmt.text, "--format"),
) -> None:
    """Compute on the device: matmul vs CPU, first call vs steady state, CPU-fallback ops."""
    from neuron_env.commands.smoke import SCHEMA
    from neuron_env.commands.smoke import smoke as run_smoke
    from neuron_env.report.render import render
    from neuron_env.report.text import use_colour
    from neuron_env.smoke.runner import SmokeOptions

    try:
        rep = run_smoke(python, SmokeOptions(
            device=device, size=size, dtype=dtype, rtol=rtol, atol=atol, iterations=iterations,
            backward=backward, compile=compile, no_fallback=no_fallback, timeout=timeout))
    except Exception as e:
        _fail(e, format.value, SCHEMA)
    sys.stdout.write(render(rep, format.value, colour=use_colour()))
    raise typer.Exit(rep.exit_code)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("neuron-env: interrupted\n")
        sys.exit(130)
