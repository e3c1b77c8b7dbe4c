"""The typer app, the options commands share, and THE boundary every command goes through.

A command function in `cli/<name>.py` only parses: it hands `emit()` a zero-argument callable
that returns a Report or a Document. `emit()` calls it, catches every exception once (the class
carries its exit code, errors.py), renders success and failure through the one renderer in the
chosen format (JSON mode always prints one JSON document), and exits with the right code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from typing import NoReturn

import typer

from neuron_env import __version__
from neuron_env.errors import EXIT_INTERNAL, Interrupted, NeuronEnvError

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
    nhc = "nhc"
    npd = "npd"
    prometheus = "prometheus"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"neuron-env {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """neuron-env: is this host ready for PyTorch on Trainium?"""


# -- options shared by several commands -------------------------------------------------------
def matrix_option(help: str = "A bundled release (2.33) or a TOML file/directory."):
    return typer.Option(None, "--matrix", envvar="NEURON_ENV_MATRIX", help=help)


def python_option(help: str = "Interpreter of the target environment (default "
                  "$NEURON_ENV_PYTHON, $VIRTUAL_ENV, python3)."):
    return typer.Option(None, "--python", help=help)


def root_option(help: str = "Read host files under DIR (a mounted image)."):
    return typer.Option(None, "--root", help=help)


def index_option(name: str, from_env: bool):
    """--neuron-index-url / --pytorch-index-url. `from_env`: also read NEURON_ENV_*_INDEX_URL
    (never for rendered scripts, whose values must come from the command line only)."""
    flag, env = f"--{name}-index-url", f"NEURON_ENV_{name.upper()}_INDEX_URL"
    label = {"neuron": "Neuron", "pytorch": "PyTorch CPU"}[name]
    return typer.Option(None, flag, envvar=env if from_env else None,
                        help=f"Mirror of the {label} index" + (f" (else ${env})." if from_env
                                                               else "."))


def split(values: list[str] | None) -> list[str]:
    """`--only a,b --only c` -> [a, b, c]."""
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


# -- the boundary -----------------------------------------------------------------------------
def emit(produce: Callable[[], object], fmt: str, schema: str, *, verbose: bool = False,
         interrupted: str = "interrupted") -> NoReturn:
    """Run `produce`, render what it returns (or the error it raised) as `fmt`, exit."""
    from neuron_env.report.render import render
    from neuron_env.report.text import use_colour

    try:
        out = produce()
        text = render(out, fmt, verbose=verbose, colour=use_colour())
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        fail(Interrupted(interrupted), fmt, schema)
    except Exception as e:  # the one place an exception becomes a message and an exit code
        fail(e, fmt, schema)
    sys.stdout.write(text)
    raise typer.Exit(out.exit_code)


def fail(err: BaseException, fmt: str, schema: str) -> NoReturn:
    """Report an error the way the chosen format speaks, then exit with its code."""
    import json

    from neuron_env.report.envelope import error_envelope
    from neuron_env.util import redact

    if isinstance(err, NeuronEnvError):
        code, payload, text = err.exit_code, err.to_dict(), err.render()
    else:
        import traceback

        code = EXIT_INTERNAL
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        payload = {"code": "internal", "message": f"{type(err).__name__}: {err}",
                   "hint": "this is a neuron-env bug: please report it", "traceback": tb}
        text = f"internal error: {type(err).__name__}: {err}\n{tb}"
    if fmt in ("nhc", "npd"):  # engines read one line on stdout, whatever happened
        line = " ".join(f"ERROR: neuron-env: {payload['message']}".split())
        sys.stdout.write(redact.text(line)[:120] + "\n")
    if fmt == "json":
        doc = error_envelope(schema, code, payload)
        sys.stdout.write(redact.text(json.dumps(doc, indent=2)) + "\n")
    sys.stderr.write(redact.text(f"neuron-env: {text}\n"))
    raise typer.Exit(code)


def main() -> None:
    import neuron_env.cli  # noqa: F401  (the command modules register on `app`)

    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("neuron-env: interrupted\n")
        sys.exit(130)
