"""ONE place that turns a command's output (Report or Document) into text, JSON or JUnit, and
writes --report FORMAT:PATH."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from neuron_env.errors import UsageError
from neuron_env.guards import redact
from neuron_env.guards.text import clean
from neuron_env.report.formats import BY_NAME, ENGINE_LINE_MAX, RENDERERS, REPORT_FILE_FORMATS
from neuron_env.report.model import Document, Report
from neuron_env.util.jsonout import dumps
from neuron_env.util.wrap import fit

FORMATS = REPORT_FILE_FORMATS  # --report FORMAT:PATH (report/formats.py, THE format table)


def render(out: Report | Document, fmt: str, verbose: bool = False,
           colour: bool = False, width: int | None = None) -> str:
    """The one renderer entry point: `pieces` joined."""
    return "".join(pieces(out, fmt, verbose, colour, width))


def pieces(out: Report | Document, fmt: str, verbose: bool = False,
           colour: bool = False, width: int | None = None) -> Iterator[str]:
    """The output in the pieces its view makes (one piece, unless a Document's view yields
    pieces: a fleet's JSON, so 100,000 nodes are never one string), each masked for
    credentials, then sanitised (guards.text.clean: no control character, lone surrogate or
    XML-forbidden character leaves the process raw; JSON escapes them itself) on the way
    out. A view that yields ends each piece at a line end, so masking and cleaning a piece at
    a time is the same as the whole. `width` (a terminal's): a report's text view is fitted to
    it (util.wrap); None keeps one line per item."""
    raw_ok = out.raw_ok if isinstance(out, Document) and fmt == "text" else ""
    # only a report is fitted: a Document's text is an artifact (a script, YAML, a diff, a
    # table) that must reach a terminal, a file or a paste unchanged
    fitted = width if fmt == "text" and isinstance(out, Report) else None
    made = _render(out, fmt, verbose, colour)
    if isinstance(made, str):
        yield _out(redact.text(made), fmt, colour, raw_ok, fitted)
        return
    for piece in made:
        yield _out(redact.text(piece), fmt, colour, raw_ok)


def _out(text: str, fmt: str, colour: bool = False, raw_ok: str = "",
         width: int | None = None) -> str:
    if fmt == "json":
        return text
    return fit(clean(text, keep_sgr=colour and fmt == "text", raw_ok=raw_ok), width)


def _render(out: Report | Document, fmt: str, verbose: bool,
            colour: bool) -> str | Iterable[str]:
    if fmt == "json":
        if isinstance(out, Document) and out.json is not None:
            return out.json(out.body)
        return dumps(out.serialize(), indent=2) + "\n"
    if isinstance(out, Document):
        if fmt == "text":
            return out.view(out.body)
        # a format the table lets a Document speak, through the view its command gave it
        # (fleet's JUnit and HTML, scan's SARIF)
        known = BY_NAME.get(fmt)
        view = getattr(out, fmt, None) if known and known.document_view else None
        if view is None:
            raise UsageError(f"--format {fmt}: this command speaks text or json")
        made: str | Iterable[str] = view(out.body)  # a str, or pieces each ending a line
        return made
    if fmt == "markdown" and out.markdown is not None:
        return out.markdown(out, verbose=verbose, colour=colour)
    if fmt in RENDERERS:
        import importlib

        return str(importlib.import_module(f"neuron_env.report.{RENDERERS[fmt]}").render(out))
    if out.view is not None:
        return out.view(out, verbose=verbose, colour=colour)
    from neuron_env.report import text

    return text.render(out, verbose=verbose, colour=colour)


def render_error(schema: str, code: int, error: dict[str, Any], fmt: str) -> str:
    """A failed command's document in `fmt`, so a pipeline that asked for JSON or JUnit always
    gets one, even on exit 2 (text: the message and its hint; nothing for a format the table
    gives no error document: SARIF)."""
    from neuron_env.report.envelope import error_envelope

    known = BY_NAME.get(fmt)
    if known is not None and not known.error_document:
        return ""
    doc = error_envelope(schema, code, error)
    if fmt == "json":
        return redact.text(dumps(doc, indent=2)) + "\n"
    if fmt in RENDERERS:
        import importlib

        mod = importlib.import_module(f"neuron_env.report.{RENDERERS[fmt]}")
        if hasattr(mod, "render_error"):
            return _out(redact.text(mod.render_error(doc)), fmt)
    if fmt in BY_NAME and BY_NAME[fmt].engine:
        return engine_line(error)
    hint = f"\nhint: {error['hint']}" if error.get("hint") else ""
    text = f"error ({error.get('code')}): {error.get('message')}{hint}\n"
    if fmt == "prometheus":  # comments only: the textfile collector still parses it
        text = "".join(f"# {ln}\n" for ln in text.splitlines())
    return _out(redact.text(text), fmt)


def engine_line(error: dict[str, Any]) -> str:
    """A failed run as a health engine reads it (Slurm NHC, NPD: one line on stdout, whatever
    happened): masked for credentials, sanitised, on one line, then cut. THE one: the boundary
    and render_error both write it."""
    line = " ".join(redact.mask(f"ERROR: neuron-env: {error.get('message')}").split())
    return clean(line, one_line=True)[:ENGINE_LINE_MAX] + "\n"


def write_error_reports(specs: list[str] | tuple[str, ...], schema: str, code: int,
                        error: dict[str, Any]) -> None:
    """Every --report path gets a document on every exit: the error one when the run failed.
    Best effort: a bad spec or an unwritable path is already the error being reported."""
    from neuron_env.guards.atomic import write_output

    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or not path or fmt not in FORMATS:
            continue
        with contextlib.suppress(OSError):
            write_output(Path(path), render_error(schema, code, error, fmt))


def write_reports(rep: Report | Document, specs: tuple[str, ...] | list[str],
                  verbose: bool = False) -> None:
    """Write every --report FORMAT:PATH (atomically) that can be written; an unwritable path
    is exit 2, and the reports already written keep the run's result."""
    from neuron_env.errors import ConfigurationError
    from neuron_env.guards.atomic import write_output

    failed = []
    for fmt, path in parse_report_specs(list(specs)):
        try:
            write_output(path, pieces(rep, fmt, verbose=verbose))
        except OSError as e:
            failed.append(f"--report {fmt}:{path}: cannot write: {e.strerror or e}")
    if failed:
        err = ConfigurationError("; ".join(failed))
        err.reports_written = True  # the boundary must not overwrite the good ones
        raise err


def parse_report_specs(specs: list[str]) -> list[tuple[str, Path]]:
    out = []
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or fmt not in FORMATS or not path:
            raise UsageError(f"--report {spec!r}: expected FORMAT:PATH with FORMAT one of "
                             f"{', '.join(FORMATS)}", hint="e.g. --report junit:/tmp/doctor.xml")
        out.append((fmt, Path(path)))
    return out
