"""The fleet's JSON streamed (#49 section 1): the renderer hands the boundary and the --report
writer pieces, each masked for credentials; joined they are the document the one-string
renderer made; a --report file is written whole or not at all."""

from __future__ import annotations

import io
import json
import os
from typing import Any

import pytest

from neuron_env import boundary
from neuron_env.commands.fleet import FleetDocument
from neuron_env.fleet import views
from neuron_env.fleet.aggregate import Entry, aggregate, stream
from neuron_env.guards import redact
from neuron_env.guards.atomic import write_output
from neuron_env.report import render
from neuron_env.report.model import Document
from neuron_env.util.jsonout import dumps

SECRET = "https://alice:hunter2tok@mirror.example/simple"
BEARER = "Authorization: Bearer s3cr3tvalue"


def _doc(iid: str, fail: bool) -> dict[str, Any]:
    results = [{"id": f"check.{k}", "status": "pass", "summary": "ok"} for k in range(5)]
    if fail:
        results.append({"id": "install.index", "status": "fail",
                        "summary": f"index {SECRET} refused; {BEARER}", "fix": f"pip -i {SECRET}"})
    return {"schema": "neuron-env.doctor/1", "exit_code": int(fail),
            "summary": {"pass": 5, "warn": 0, "fail": int(fail), "skip": 0, "error": 0},
            "target": {"instance": {"instance_id": iid, "type": "trn2.48xlarge"},
                       "packages": {"torch": "2.13.0"}},
            "results": results}


def _entries(n: int = 60) -> list[Entry]:
    es = [Entry(f"i-{i:04d}", f"d/{i}.json", doc=_doc(f"i-{i:04d}", i % 7 == 3))
          for i in range(n)]
    es.append(Entry("i-gone", "d/gone.json", unreachable="offline", detail=SECRET))
    return es


def _fleet() -> Document:
    es = _entries()
    return FleetDocument(stream(es, {"engine": "files", "inputs": ["d"]}), views.text)


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(views, "PIECE", 500)  # a few nodes a piece: many pieces


def test_the_streamed_json_is_valid_and_equal_to_the_one_string(small_pieces):
    doc = _fleet()
    parts = list(render.pieces(doc, "json"))
    assert len(parts) > 5 and all(p.endswith("\n") for p in parts)
    joined = "".join(parts)
    # the one string the renderer made before streaming: the whole text, masked once
    assert joined == redact.text(views.json_text(doc.body))
    assert joined == render.render(doc, "json")
    es = _entries()
    plain = json.loads(redact.text(dumps(aggregate(es, doc.body["source"]), indent=2)))
    assert json.loads(joined) == plain  # the values of the non-streamed document


def test_an_empty_fleet_streams_a_valid_document(small_pieces):
    doc = FleetDocument(stream([], {"engine": "files", "inputs": []}), views.text)
    assert json.loads(render.render(doc, "json"))["instances"] == []


def test_a_secret_in_a_report_is_masked_in_every_piece(small_pieces):
    parts = list(render.pieces(_fleet(), "json"))
    secret_parts = [p for p in parts if "mirror.example" in p]
    assert len(secret_parts) > 2  # the secret is in several pieces, each masked
    for p in parts:
        assert "hunter2tok" not in p and "s3cr3tvalue" not in p and "alice:" not in p
    assert "https://***@mirror.example/simple" in "".join(parts)
    assert "Bearer ***" in "".join(parts)


def test_the_boundary_writes_the_pieces_to_stdout(small_pieces, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    code = boundary.run(_fleet, "json", "neuron-env.fleet/1")
    assert code == 1
    assert out.getvalue() == render.render(_fleet(), "json")
    assert "hunter2tok" not in out.getvalue()


def test_an_error_after_output_began_is_said_on_stderr_only(monkeypatch, capsys):
    def broken(body):
        yield '{"partial": true,\n'
        raise RuntimeError("view broke")
    doc = Document({"exit_code": 0}, views.text, json=broken)
    code = boundary.run(lambda: doc, "json", "neuron-env.fleet/1")
    got = capsys.readouterr()
    assert code == 3
    assert got.out == '{"partial": true,\n'  # no second (error) document appended to it
    assert "view broke" in got.err


def test_a_report_file_is_written_whole(tmp_path, small_pieces):
    path = tmp_path / "fleet.json"
    render.write_reports(_fleet(), [f"json:{path}"])
    assert path.read_text() == render.render(_fleet(), "json")
    assert os.listdir(tmp_path) == ["fleet.json"]


def test_a_report_file_is_written_whole_or_not_at_all(tmp_path):
    path = tmp_path / "fleet.json"
    path.write_text("the previous report\n")

    def broken(body):
        yield '{\n  "schema": "neuron-env.fleet/1",\n'
        raise RuntimeError("view broke")
    doc = Document({"exit_code": 0}, views.text, json=broken)
    with pytest.raises(RuntimeError):
        render.write_reports(doc, [f"json:{path}"])
    assert path.read_text() == "the previous report\n"  # untouched, not half a document
    assert os.listdir(tmp_path) == ["fleet.json"]  # no temporary file left behind
    with pytest.raises(RuntimeError):
        render.write_reports(doc, [f"json:{tmp_path / 'new.json'}"])
    assert os.listdir(tmp_path) == ["fleet.json"]


def test_the_writer_takes_pieces(tmp_path):
    path = tmp_path / "out.txt"
    write_output(path, iter(["a\n", "b\n", "c\n"]))
    assert path.read_text() == "a\nb\nc\n"


def _junit_tree(body: dict[str, Any]) -> str:
    """The reference: the whole ElementTree the JUnit view built before it streamed."""
    import xml.etree.ElementTree as ET

    s = body["summary"]
    root = ET.Element("testsuites", name="neuron-env")
    ts = ET.SubElement(root, "testsuite", name="neuron-env.fleet", tests=str(s["instances"]))
    failures = errors = 0
    for r in body["instances"]:
        tc = ET.SubElement(ts, "testcase", classname="neuron-env.fleet", name=r["id"])
        detail = "\n".join([r["reason"], *(f"{p['id']}: {p['status']}: {p['summary']}"
                                           for p in r["failing"]), f"source: {r['source']}"])
        if r["verdict"] == "fail":
            failures += 1
            ET.SubElement(tc, "failure", message=r["reason"], type="fail").text = detail
        elif r["verdict"] not in ("pass", "warn"):
            errors += 1
            ET.SubElement(tc, "error", message=r["reason"], type=r["verdict"]).text = detail
        else:
            ET.SubElement(tc, "system-out").text = detail
    ts.set("failures", str(failures))
    ts.set("errors", str(errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


@pytest.mark.parametrize("n", [0, 1, 450])
def test_the_streamed_junit_is_the_tree_it_was_and_masked(n):
    import xml.etree.ElementTree as ET

    es = _entries(n)[:n]
    es.append(Entry("i-odd", "d/odd.json", unreachable="offline", detail='a\x01b <&>"'))
    doc = FleetDocument(stream(es, {"engine": "files", "inputs": ["d"]}), views.text)
    parts = list(render.pieces(doc, "junit"))
    assert len(parts) > (2 if n > 400 else 0) and all(p.endswith("\n") for p in parts)
    joined = "".join(parts)
    assert joined == render._out(redact.text(_junit_tree(doc.body)), "junit")
    assert "hunter2tok" not in joined
    suite = ET.fromstring(joined.encode())[0]
    assert len(suite) == len(es)
    assert suite.get("errors") == str(sum(1 for e in es if e.unreachable))
