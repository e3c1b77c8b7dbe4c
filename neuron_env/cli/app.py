"""The typer app, the options commands share, and THE boundary every command goes through.

A command function in `cli/<name>.py` only parses: it hands `emit()` a zero-argument callable
that returns a Report or a Document. `emit()` calls it, catches every exception once (the class
carries its exit code, errors.py), renders success and failure through the one renderer in the
chosen format (JSON mode always prints one JSON document), and exits with the right code.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

import typer

from neuron_env import __version__, boundary

if TYPE_CHECKING:
    from neuron_env.report.model import Document, Report

app = typer.Typer(
    name="neuron-env", no_args_is_help=True, add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"],
                      "max_content_width": shutil.get_terminal_size((100, 24)).columns},
    help="Check, install and smoke-test the AWS Neuron (TorchNeuron) PyTorch backend.",
    pretty_exceptions_enable=False, rich_markup_mode=None,
)
matrix_app = typer.Typer(no_args_is_help=True, help="The version matrices. List, show, "
                         "validate, import.")
app.add_typer(matrix_app, name="matrix")


class Device(str, Enum):  # a str Enum: typer shows the values in --help, refuses others (2)
    neuron = "neuron"
    cpu = "cpu"
    cuda = "cuda"


class Dtype(str, Enum):  # smoke's and trial's
    float32 = "float32"
    bfloat16 = "bfloat16"


def format_choices(name: str, group: str) -> type[Enum]:
    """A command group's `--format` choices as the str Enum typer lists and checks, derived
    from THE format table (report/formats.py: a new format is a row there, not a member
    here)."""
    from neuron_env.report.formats import offered_by

    choices = Enum(name, [(f, f) for f in offered_by(group)], type=str)  # type: ignore[misc]
    return cast("type[Enum]", choices)


if TYPE_CHECKING:  # what the type checker sees: a str Enum (members: the table's, at run time)
    class _Formats(str, Enum):
        text = "text"

    Fmt = _Formats
    DoctorFmt = _Formats
    ScanFmt = _Formats
    FleetFmt = _Formats
    TrialFmt = _Formats
else:
    Fmt = format_choices("Fmt", "any")  # every command: text, json
    DoctorFmt = format_choices("DoctorFmt", "doctor")  # doctor, collectives
    ScanFmt = format_choices("ScanFmt", "scan")
    FleetFmt = format_choices("FleetFmt", "fleet")
    TrialFmt = format_choices("TrialFmt", "trial")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"neuron-env {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """neuron-env: is this host ready for PyTorch on Trainium?"""


# -- options shared by several commands -------------------------------------------------------
def matrix_option(help: str = "A bundled release (2.34) or a TOML file/directory."):
    from neuron_env.commands.doctor_flags import ENVIRONMENT

    return typer.Option(None, "--matrix", envvar=ENVIRONMENT["matrix"], metavar="RELEASE|PATH",
                        help=help)


def python_option(help: str = "Interpreter of the target environment (default "
                  "$NEURON_ENV_PYTHON, $VIRTUAL_ENV, python3)."):
    return typer.Option(None, "--python", metavar="PATH", help=help)


def root_option(help: str = "Read host files under DIR (a mounted image)."):
    return typer.Option(None, "--root", metavar="DIR", help=help)


def index_option(name: str, from_env: bool):
    """--neuron-index-url / --pytorch-index-url. `from_env`: also read NEURON_ENV_*_INDEX_URL
    (never for rendered scripts, whose values must come from the command line only)."""
    from neuron_env.commands.doctor_flags import ENVIRONMENT

    flag, env = f"--{name}-index-url", ENVIRONMENT[f"{name}_index_url"]
    label = {"neuron": "Neuron", "pytorch": "PyTorch CPU"}[name]
    return typer.Option(None, flag, envvar=env if from_env else None, metavar="URL",
                        help=f"Mirror of the {label} index" + (f" (else ${env})." if from_env
                                                               else "."))


MAX_SECONDS = 30 * 24 * 3600.0  # a month: any longer limit is a typo, and overflows timers


# -- numbers: every int/float option is checked here, while parsing -------------------------
# tests/unit/test_cli_edges.py walks the typer app: every int or float option must carry a
# callback made by `number()` (exit 2 for nan, inf, or out of range, before anything runs).
def number(lo: float | None = 0, hi: float | None = None, *, lo_open: bool = False,
           what: str = "a number", example: str = "1"):
    """An option callback: the value (None passes) must be finite and within [lo, hi]
    (`lo_open`: > lo). One place for every numeric option of the CLI."""
    import math

    def check(value):
        if value is None:
            return value
        bad = not math.isfinite(value) or (lo is not None and (value <= lo if lo_open
                                                                else value < lo)) \
            or (hi is not None and value > hi)
        if bad:
            rng = (f"{'>' if lo_open else '>='} {lo:g}" if lo is not None else "") + \
                (f"{' and ' if lo is not None else ''}<= {hi:g}" if hi is not None else "")
            raise typer.BadParameter(f"{value} is not {what}: give a finite number "
                                     f"{rng} (e.g. {example})")
        return value
    check.neuron_env_number = True  # type: ignore[attr-defined]
    return check


seconds = number(0, MAX_SECONDS, lo_open=True, what="a time limit", example="300")
tolerance = number(0, what="a tolerance", example="1e-3")
count = number(0, 2**31 - 1, what="a count", example="10")
positive = number(1, 2**31 - 1, what="a positive count", example="8")
price = number(0, 10**6, what="a price in USD per hour", example="1.34")
wait_seconds = number(0, MAX_SECONDS, what="a time to wait", example="600")
learning_rate = number(0, 10**6, lo_open=True, what="a learning rate", example="0.01")


def _writable(path: str) -> None:
    from neuron_env.errors import RefusedPath
    from neuron_env.guards.atomic import check_output

    try:
        check_output(path)
    except RefusedPath as e:
        raise typer.BadParameter(str(e)) from None
    except Exception as e:  # any other failure of a callback is a usage error too (#45)
        raise typer.BadParameter(f"{path}: cannot be examined ({type(e).__name__}: {e})") \
            from None


def output_path(value: str | None) -> str | None:
    """Option callback of every path the user names for us to WRITE (`--save-baseline`,
    `--out`): a device, FIFO, socket, directory or symbolic link is refused while parsing (exit
    2) by the one writer's own check (guards/atomic.check_output), which the write repeats."""
    if value is not None:
        _writable(str(value))
    return value


def report_outputs(values: list[str] | None) -> list[str] | None:
    """output_path for `--report FORMAT:PATH` (the PATH part of each)."""
    for v in values or []:
        _, sep, path = v.partition(":")
        if sep and path:
            _writable(path)
    return values


def output_dir(value: Path | str | None) -> Path | str | None:
    """output_path for a directory we write files into (`matrix import --out`, `matrix update
    --dir`): a symbolic link, or something that is not a directory, is refused (exit 2); each
    file in it is then written by guards/atomic.write_output."""
    import os
    import stat

    if value is None:
        return value
    try:
        mode = os.lstat(value).st_mode
    except FileNotFoundError:
        return value
    except OSError as e:
        raise typer.BadParameter(f"{value}: cannot be examined: {e.strerror or e}") from None
    except (ValueError, OverflowError) as e:  # a NUL, an unbounded number: a usage error
        raise typer.BadParameter(f"{value}: cannot be examined ({e})") from None
    if not stat.S_ISDIR(mode):
        what = "a symbolic link" if stat.S_ISLNK(mode) else "not a directory"
        raise typer.BadParameter(f"{value} is {what}: neuron-env writes only into a real "
                                 "directory; give its real path")
    return value


output_path.neuron_env_output = True  # type: ignore[attr-defined]
report_outputs.neuron_env_output = True  # type: ignore[attr-defined]
output_dir.neuron_env_output = True  # type: ignore[attr-defined]


split = boundary.split  # `--only a,b --only c` -> [a, b, c]


# -- the boundary (neuron_env/boundary.py: typer-free, shared with entry.py) -----------------
def emit(produce: Callable[[], Report | Document], fmt: str, schema: str, *, verbose: bool = False,
         interrupted: str = "interrupted", reports: tuple[str, ...] = ()) -> NoReturn:
    """Run `produce`, render what it returns (or the error it raised) as `fmt`, exit.
    `reports`: the --report FORMAT:PATH specs, which get the error document on failure."""
    from neuron_env.cli import requires

    raise typer.Exit(boundary.run(
        produce, fmt, schema, verbose=verbose, interrupted=interrupted, reports=reports,
        # an option without its partner: exit 2
        before=lambda: requires.check(requires.current_context()), passthrough=(typer.Exit,)))


def fail(err: BaseException, fmt: str, schema: str, reports: tuple[str, ...] = ()) -> NoReturn:
    """Report an error the way the chosen format speaks (and into every --report), exit."""
    raise typer.Exit(boundary.fail(err, fmt, schema, reports))


def _parse_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(usage errors, aborts) of the click typer runs on: its own copy from typer 0.28 (whose
    exceptions derive from TyperException; importing click too would cost ~12 ms), else click."""
    if hasattr(typer, "TyperException"):
        return (typer.TyperException,), (typer.Abort,)
    import click  # pragma: no cover - typer < 0.28 runs on click

    return (click.exceptions.ClickException,), (typer.Abort, click.exceptions.Abort)


def main() -> None:
    from neuron_env.cli import lazy
    from neuron_env.cli.command_table import COMMANDS, PANELS

    usage, abort = _parse_errors()
    stop: tuple[type[BaseException], ...] = (KeyboardInterrupt, *abort)
    boundary.sigterm_interrupts()
    try:
        # parse errors come back here (JSON mode speaks JSON); only the command run is
        # imported and built
        rc = lazy.command(app, COMMANDS, PANELS)(standalone_mode=False)
    except usage as e:
        usage_error(e, sys.argv[1:])
    except stop:
        sys.stderr.write("neuron-env: interrupted\n")
        sys.exit(130)
    import gc

    gc.freeze()  # exiting: the interpreter's last collections need not walk what the run made
    sys.exit(rc if isinstance(rc, int) else 0)


_SCHEMAS = {"matrix show": "matrix", "imagebuilder-component": "component"}


def usage_error(e, argv: list[str]) -> NoReturn:
    """A flag click could not parse (`--size abc`, an unknown flag): with `--format json`, the
    error envelope on stdout like any other failure; otherwise click's own message. Exit 2."""
    import itertools

    names: list[str] = []
    ctx = getattr(e, "ctx", None)
    has_format = ctx is not None and any(p.name == "format" for p in ctx.command.params)
    while ctx is not None and ctx.parent is not None:  # the command's names, not the program's
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    path = " ".join(names)
    wants_json = "--format=json" in argv or any(
        a == "--format" and b == "json" for a, b in itertools.pairwise(argv))
    code = getattr(e, "exit_code", 2)
    if not (wants_json and has_format and path) or type(e).__name__ == "NoArgsIsHelpError":
        e.show()
        sys.exit(code)
    from neuron_env.errors import UsageError

    hint = f"see `neuron-env {path} --help`"
    try:
        fail(UsageError(e.format_message(), hint=hint), "json",
             f"neuron-env.{_SCHEMAS.get(path, path.replace(' ', '-'))}/1")
    except typer.Exit as x:
        sys.exit(x.exit_code)
