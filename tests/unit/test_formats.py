"""One format table (report/formats.py): every command's --format choices, the typer-free
entry's, the renderer's dispatch and --report's formats derive from it; SARIF is a format of
the one renderer; the engine line of a failed run is one function."""

from __future__ import annotations

import importlib
import io
import sys

import pytest
from typer.main import get_command

from neuron_env import boundary, entry
from neuron_env.cli import register
from neuron_env.errors import UsageError
from neuron_env.report import formats
from neuron_env.report.model import Document
from neuron_env.report.render import FORMATS, RENDERERS, engine_line, parse_report_specs, render

# command path -> its group in the table (every command not listed offers text and json)
GROUP_OF = {("doctor",): formats.DOCTOR, ("collectives",): formats.DOCTOR,
            ("scan",): formats.SCAN, ("fleet", "doctor"): formats.FLEET,
            ("fleet", "report"): formats.FLEET, ("trial",): formats.TRIAL}


def _format_options(cmd, path=()):
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _format_options(sub, (*path, name))
    for p in getattr(cmd, "params", []):
        if p.name == "format":
            yield path, tuple(p.type.choices)


def test_every_format_option_offers_exactly_its_row_of_the_table():
    seen = dict(_format_options(get_command(register())))  # every command, built
    assert len(seen) > 15
    for path, choices in seen.items():
        assert choices == formats.offered_by(GROUP_OF.get(path, formats.ANY)), path


def test_the_entry_and_the_renderer_read_the_table():
    assert formats.offered_by(formats.DOCTOR) == entry.FORMATS
    assert tuple(f.name for f in formats.FORMATS if f.report_file) == FORMATS
    assert set(RENDERERS) == {f.name for f in formats.FORMATS if f.renderer}
    for fmt, module in RENDERERS.items():  # each names a module that renders a report
        assert callable(importlib.import_module(f"neuron_env.report.{module}").render), fmt
    assert [fmt for fmt, _ in parse_report_specs([f"{f}:x" for f in FORMATS])] == list(FORMATS)
    with pytest.raises(UsageError):
        parse_report_specs(["sarif:x"])  # a scan document's format, not a report file's


def test_sarif_is_a_format_of_the_one_renderer():
    doc = Document({"exit_code": 0}, lambda body: "people", sarif=lambda body: '{"runs": []}')
    assert render(doc, "sarif") == '{"runs": []}'
    assert render(doc, "text") == "people"
    with pytest.raises(UsageError, match="speaks text or json"):
        render(Document({"exit_code": 0}, lambda body: "people"), "sarif")


def test_one_engine_line_for_the_boundary_and_the_renderer(monkeypatch):
    err = UsageError("bad \x1b[31m input\nsecond line " + "x" * 200)
    for fmt in formats.ENGINE_FORMATS:
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", io.StringIO())
        assert boundary.fail(err, fmt, "neuron-env.doctor/1") == 2
        line = out.getvalue()
        assert line == engine_line(err.to_dict())
        assert line.count("\n") == 1 and len(line) <= formats.ENGINE_LINE_MAX + 1
        assert "\x1b" not in line and "second line" in line


def test_a_failed_scan_prints_no_sarif(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert boundary.fail(UsageError("no path to scan"), "sarif", "neuron-env.scan/1") == 2
    assert out.getvalue() == ""
