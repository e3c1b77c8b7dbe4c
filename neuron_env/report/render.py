"""ONE place that turns a command's output (Report or Document) into text, JSON or JUnit, and
writes --report FORMAT:PATH."""

from __future__ import annotations

import json
from pathlib import Path

from neuron_env.errors import UsageError
from neuron_env.report.model import Document, Report
from neuron_env.util import redact
from neuron_env.util.atomic import write_atomic  # noqa: F401  (the one writer)

FORMATS = ("text", "json", "junit")
ENGINE_FORMATS = ("nhc", "npd", "prometheus")  # doctor output for Slurm, NPD, node_exporter
FORMATS = (*FORMATS, *ENGINE_FORMATS)


def render(out: Report | Document, fmt: str, verbose: bool = False,
           colour: bool = False) -> str:
    """The one renderer entry point; every output is masked for credentials on the way out."""
    return redact.text(_render(out, fmt, verbose, colour))


def _render(out: Report | Document, fmt: str, verbose: bool, colour: bool) -> str:
    if fmt == "json":
        return json.dumps(out.serialize(), indent=2, default=str) + "\n"
    if isinstance(out, Document):
        if fmt == "junit" and getattr(out, "junit", None):  # fleet: one testcase per instance
            return out.junit(out.body)
        if fmt != "text":
            raise UsageError(f"--format {fmt}: this command speaks text or json")
        return out.view(out.body)
    if fmt in ENGINE_FORMATS:
        import importlib

        return importlib.import_module(f"neuron_env.report.{fmt}").render(out)
    if fmt == "junit":
        from neuron_env.report import junit

        return junit.render(out, suite=out.schema.split("/")[0])
    if out.view is not None:
        return out.view(out, verbose=verbose, colour=colour)
    from neuron_env.report import text

    return text.render(out, verbose=verbose, colour=colour)


def parse_report_specs(specs: list[str]) -> list[tuple[str, Path]]:
    out = []
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or fmt not in FORMATS or not path:
            raise UsageError(f"--report {spec!r}: expected FORMAT:PATH with FORMAT one of "
                             f"{', '.join(FORMATS)}", hint="e.g. --report junit:/tmp/doctor.xml")
        out.append((fmt, Path(path)))
    return out
