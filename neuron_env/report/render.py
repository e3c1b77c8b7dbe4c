"""ONE place that turns a Report into text, JSON or JUnit, and writes --report FORMAT:PATH."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from neuron_env.errors import UsageError
from neuron_env.report.model import Report
from neuron_env.util import redact

FORMATS = ("text", "json", "junit")


def render(report: Report, fmt: str, verbose: bool = False, colour: bool = False) -> str:
    return redact.text(_render(report, fmt, verbose, colour))


def _render(report: Report, fmt: str, verbose: bool, colour: bool) -> str:
    if fmt == "json":
        return json.dumps(report.serialize(), indent=2, default=str) + "\n"
    if fmt == "junit":
        from neuron_env.report import junit

        return junit.render(report, suite=report.schema.split("/")[0])
    from neuron_env.report import text

    return text.render(report, verbose=verbose, colour=colour)


def parse_report_specs(specs: list[str]) -> list[tuple[str, Path]]:
    out = []
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or fmt not in FORMATS or not path:
            raise UsageError(f"--report {spec!r}: expected FORMAT:PATH with FORMAT one of "
                             f"{', '.join(FORMATS)}", hint="e.g. --report junit:/tmp/doctor.xml")
        out.append((fmt, Path(path)))
    return out


def write_atomic(path: Path, content: str) -> None:
    """Write next to the target and rename, so a reader never sees half a report."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
