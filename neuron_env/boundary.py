"""The CLI's edge without typer. THE boundary: run a command's producer, render what it returns
(or the error it raised) in the chosen format, write it, return the exit code; SIGTERM as
Ctrl-C; the `--only a,b` list rule.

`cli/app.emit` (every typer command) and `entry.py` (doctor's common invocations, parsed without
importing typer) both go through `run`; neither catches an exception anywhere else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from neuron_env.errors import EXIT_INTERNAL, Interrupted, NeuronEnvError

if TYPE_CHECKING:
    from neuron_env.report.model import Document, Report


def run(produce: Callable[[], Report | Document], fmt: str, schema: str, *,
        verbose: bool = False, interrupted: str = "interrupted", reports: tuple[str, ...] = (),
        before: Callable[[], None] | None = None,
        passthrough: tuple[type[BaseException], ...] = ()) -> int:
    """`before()` (checks that may refuse the run), then `produce()`; its output rendered as
    `fmt` on stdout (a piece at a time, as the renderer makes them: a fleet's JSON is never one
    string), or the error it raised reported (fail; on stderr only once output began). The
    exit code. `passthrough`:
    exceptions that are the caller's own way of exiting (typer's Exit), re-raised as they are.
    """
    from neuron_env.report.render import pieces
    from neuron_env.report.text import use_colour

    written = writing = False  # once output began, an error is said on stderr only
    try:
        if before is not None:
            before()
        out = produce()
        for piece in pieces(out, fmt, verbose=verbose, colour=use_colour(),
                            width=terminal_width()):
            writing = True
            sys.stdout.write(piece)
            written, writing = True, False
    except passthrough:
        raise
    except KeyboardInterrupt:
        return fail(Interrupted(interrupted), "text" if written else fmt, schema, reports)
    except Exception as e:  # the one place an exception becomes a message and an exit code
        if writing:  # stdout itself refused (a closed pipe): as before streaming, not ours
            raise
        return fail(e, "text" if written else fmt, schema, reports)
    return out.exit_code


def terminal_width() -> int | None:
    """stdout's width when it is a terminal (text is fitted to it); None when piped (one line
    per item, for grep and logs)."""
    if not (hasattr(sys.stdout, "isatty") and sys.stdout.isatty()):
        return None
    import shutil

    return max(shutil.get_terminal_size((80, 24)).columns, 20)


def fail(err: BaseException, fmt: str, schema: str, reports: tuple[str, ...] = ()) -> int:
    """Report an error the way the chosen format speaks (and into every --report); its exit
    code."""
    from neuron_env.guards import redact
    from neuron_env.guards.text import clean
    from neuron_env.report.render import render_error, write_error_reports

    if isinstance(err, NeuronEnvError):
        code, payload, text = err.exit_code, err.to_dict(), err.render()
    else:
        import traceback

        code = EXIT_INTERNAL
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        payload = {"code": "internal", "message": f"{type(err).__name__}: {err}",
                   "hint": "this is a neuron-env bug: please report it", "traceback": tb}
        text = f"internal error: {type(err).__name__}: {err}\n{tb}"
    if not getattr(err, "reports_written", False):
        write_error_reports(reports, schema, code, payload)
    if fmt != "text":  # the document the format speaks (an engine's one line: engine_line)
        sys.stdout.write(render_error(schema, code, payload, fmt))
    sys.stderr.write(clean(redact.text(f"neuron-env: {text}\n")))
    return code


def split(values: list[str] | None) -> list[str]:
    """`--only a,b --only c` -> [a, b, c]."""
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


def sigterm_interrupts() -> None:
    """SIGTERM (systemd, Slurm, `timeout`, a CI runner) ends a command like Ctrl-C: children
    killed, exit 130 and, under --format json, still one JSON document."""
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)
