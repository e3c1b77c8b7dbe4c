"""`fleet report` at fleet size and on hostile reports (#49 section 1, #45 findings 7-8, #48
items 9 and 15): a depth bound read from the bytes, per-node summaries instead of documents,
the JSON view by the C encoder, a bounded s3 read-ahead, and a fleet page that stays linear in
its input (labels cut before plotting, capped heat-map columns, failures grouped)."""

from __future__ import annotations

import json
import random
import re
import threading
from typing import Any

import pytest

from neuron_env.fleet import views
from neuron_env.fleet.aggregate import Entry, Fleet, aggregate, stream
from neuron_env.fleet.sources import _pooled, parse


def _walk_depth(doc: Any) -> int:  # the reference: the walk the byte scan replaced
    deepest, stack = 0, [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _nasty_string(rng: random.Random) -> str:
    return "".join(rng.choice(['"', "\\", "[", "]", "{", "}", "a", "\n", "é", "\\\\", '\\"'])
                   for _ in range(rng.randint(0, 8)))


def _value(rng: random.Random, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice([1, 2.5, None, True, _nasty_string(rng)])
    if rng.random() < 0.5:
        return [_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {_nasty_string(rng): _value(rng, depth - 1) for _ in range(rng.randint(0, 3))}


def test_the_depth_read_from_the_bytes_is_the_depth_of_the_document():
    from neuron_env.guards.files import _depth

    rng = random.Random(49)
    for _ in range(400):
        doc = _value(rng, rng.randint(0, 9))
        for text in (json.dumps(doc), json.dumps(doc, indent=1, ensure_ascii=False)):
            assert _depth(text.encode(), 64) == _walk_depth(doc), text


def test_a_deep_report_is_still_refused_and_a_normal_one_read():
    from neuron_env.errors import BadInput
    from neuron_env.guards.files import parse_json

    with pytest.raises(BadInput, match="nested more than 64"):
        parse_json("[" * 65 + "]" * 65, "report")
    assert parse_json("[" * 64 + "]" * 64, "report") is not None
    # brackets inside strings are not nesting
    assert parse_json(json.dumps({"a": "[" * 500 + '\\"{' * 100}), "report")
    e = parse(b'{"schema": "neuron-env.doctor/1", "x": ' + b"[" * 70 + b"]" * 70 + b"}",
              "n", "f")
    assert e.unreadable == "not a doctor report: JSON nested too deeply"


def test_the_secret_hint_finds_what_the_regex_found():
    from neuron_env.guards import redact

    for s in ("Authorization: x", "AUTHORİZATION", "authorız", "ſecret", "x-AMZ-", "TOKEN",
              "paSSw", "API_KEY", "apikey", "Sig", "nothing here", "api-key", "sıg", "K", "",
              '"checks": {"os.release": "pass"}'):
        assert redact._hinted(s) >= bool(redact._HINT.search(s)), s
        assert not redact._hinted(s) or redact._HINT.search(s) or "ı" in s or "ſ" in s, s


def _doc(iid: str, results: list[dict[str, Any]], code: int = 1) -> dict[str, Any]:
    return {"schema": "neuron-env.doctor/1", "exit_code": code,
            "summary": {"pass": 1, "warn": 0, "fail": 1, "skip": 0, "error": 0},
            "target": {"instance": {"instance_id": iid, "type": "trn2.48xlarge"},
                       "packages": {"torch": "2.13.0"}},
            "results": results}


def _ok(i: int) -> dict[str, Any]:
    return {"id": f"check.{i}", "status": "pass", "summary": "ok"}


def test_a_node_is_kept_as_a_summary_and_equal_values_are_kept_once():
    fleet = Fleet()
    for i in range(50):
        fleet.add(Entry(f"i-{i}", "f", doc=_doc(f"i-{i}", [_ok(k) for k in range(20)], 0)))
    assert len({id(n.checks) for n in fleet.nodes}) == 1  # one vector for 50 nodes
    assert len({id(n.versions) for n in fleet.nodes}) == 1
    assert not any(hasattr(n, "doc") for n in fleet.nodes)


def test_the_json_view_is_the_document_with_one_node_per_line():
    es = [Entry(f"i-{i}", f"d/{i}.json", doc=_doc(f"i-{i}", [_ok(1), {
        "id": "os.release", "status": "fail" if i % 2 else "pass", "summary": "old\tOS",
        "fix": "upgrade"}], i % 2)) for i in range(6)]
    es.append(Entry("i-x", "d/x.json", unreachable="offline", detail="gone"))
    body = stream(es, {"engine": "files", "inputs": ["d"]})
    text = views.json_text(body)
    assert json.loads(text) == json.loads(json.dumps(aggregate(es, body["source"])))
    lines = text.splitlines()
    assert sum(line.startswith('    {"id": "i-') for line in lines) == 7
    assert lines[-2] == '  "exit_code": 1' and text.endswith("}\n")
    empty = views.json_text(stream([], {"engine": "files"}))
    assert json.loads(empty)["instances"] == []


def test_an_unreadable_input_says_what_it_is_never_schema_none():
    """#48 item 9: `not a doctor report (schema None)` for a file without a schema."""
    why = {raw: parse(raw, "n", "f").unreadable for raw in (b"{}", b"[1]", b'"x"', b"null",
                                                           b'{"schema": "other/1"}')}
    assert not any("None" in w for w in why.values()), why
    assert "no `schema` field" in why[b"{}"] and "a JSON array" in why[b"[1]"]
    assert "a JSON null" in why[b"null"] and "'other/1'" in why[b'{"schema": "other/1"}']


def test_three_reports_of_one_id_name_their_files_in_every_view():
    """#48 item 15: `i-...#2`, `#3` said nothing of which file each row was."""
    es = [Entry("i-dup", f"reports/{n}.json", doc=_doc("i-dup", [_ok(1)], 0))
          for n in ("a", "b", "c")] + [Entry("i-one", "reports/d.json",
                                             doc=_doc("i-one", [_ok(1)], 0))]
    body = aggregate(es, {"engine": "files"})
    assert [r["id"] for r in body["instances"]] == [
        "i-dup (a.json)", "i-dup (b.json)", "i-dup (c.json)", "i-one"]
    same = aggregate([Entry("i-dup", f"{d}/a.json", doc=_doc("i-dup", [_ok(1)], 0))
                      for d in ("x", "y")], {"engine": "files"})
    assert [r["id"] for r in same["instances"]] == ["i-dup (a.json)", "i-dup (a.json)#2"]


def test_a_tab_in_a_status_is_read_as_error_and_the_page_renders():
    """#45 finding 8: statuses were joined with TAB and split again: exit 3."""
    es = [Entry("i-1", "f", doc=_doc("i-1", [{"id": "a", "status": "pass\tfail",
                                              "summary": "x"}, _ok(2)])),
          Entry("i-2", "f", doc=_doc("i-2", [{"id": "a", "status": "x" * 10_000,
                                              "summary": "x"}], 0))]
    body = aggregate(es, {"engine": "files"})
    assert [r["checks"]["a"] for r in body["instances"]] == ["error", "error"]
    import jsonschema

    from tests.unit.test_fleet import SCHEMA

    jsonschema.validate(body, SCHEMA)  # the schema's closed set of statuses
    page = views.html(body)
    assert "pass\tfail" not in page and 'title="a: error"' in page


def test_a_one_megabyte_check_id_is_cut_before_it_is_drawn():
    """#45 finding 7: 31 s and 728 MB to plot one node's 1 MB check id."""
    huge = "c" * 1_000_000
    es = [Entry(f"i-{i}", "f", doc=_doc(f"i-{i}", [
        {"id": huge, "status": "fail", "summary": "s", "fix": "f"}, _ok(1)])) for i in range(3)]
    page = views.html(aggregate(es, {"engine": "files"}))
    assert len(page) < 100_000, len(page)
    assert "c" * 59 + "…" in page  # the label, cut


def test_twenty_hostile_reports_make_a_bounded_heat_map():
    """#45 finding 7: nodes x distinct ids (20 reports -> 71 MB of HTML)."""
    es = [Entry(f"i-{n}", "f", doc=_doc(f"i-{n}", [
        {"id": f"n{n}-check-{k}-" + "x" * 40, "status": "fail" if k % 3 else "warn",
         "summary": "s"} for k in range(1500)])) for n in range(20)]
    page = views.html(aggregate(es, {"engine": "files"}))
    heat = page[page.index('<table class="heat">'):]
    assert heat.count('<th class="v"') == 41  # 40 checks that fail most, the rest in one
    assert "29960 other checks (worst status)" in heat
    assert len(page) < 250_000, len(page)  # 65 MB before


def test_skip_and_not_run_look_different():
    """#48 item 9: both were the same grey."""
    es = [Entry("i-1", "f", doc=_doc("i-1", [{"id": "a", "status": "skip", "summary": "x"},
                                             _ok(1)])),
          Entry("i-2", "f", doc=_doc("i-2", [_ok(1)]))]
    page = views.html(aggregate(es, {"engine": "files"}))
    assert 'class="c s-skip" title="a: skip"' in page
    assert 'class="c s-notrun" title="a: not run"' in page
    rules = dict(re.findall(r"\.(s-skip|s-notrun)\{background:([^;]+);", page))
    assert rules["s-skip"] != rules["s-notrun"], rules


def test_the_node_count_axis_has_whole_number_ticks():
    """#48 item 9: the counts axis had ticks at 0.5, 1.5, 2.5."""
    from neuron_env.report import plots

    if not plots.available():
        pytest.skip("matplotlib (the html extra) is not installed")
    svg = plots.stacked(["a", "b"], {"fail": [1, 2], "pass": [2, 1]}, title="t", xlabel="n")
    ticks = re.findall(r"<text[^>]*>([0-9.]+)</text>", svg)
    assert ticks and all(float(t).is_integer() and "." not in t for t in ticks), ticks


def test_s3_objects_are_read_a_bounded_number_at_a_time_in_order():
    lock, state = threading.Lock(), {"now": 0, "most": 0, "started": 0}

    def read(key: str) -> Entry:
        with lock:
            state["now"] += 1
            state["started"] += 1
            state["most"] = max(state["most"], state["now"])
        threading.Event().wait(0.002)
        with lock:
            state["now"] -= 1
        return Entry(key, key, unreadable="x")

    got = []
    for e in _pooled(read, [f"k{i:03d}" for i in range(120)], 4):
        got.append(e.id)
        assert state["started"] <= len(got) + 2 * 4  # read ahead of the consumer: bounded
    assert got == [f"k{i:03d}" for i in range(120)]
    assert 1 < state["most"] <= 4
    assert [e.id for e in _pooled(read, ["a", "b"], 1)] == ["a", "b"]


def test_a_streamed_fleet_document_serializes_to_plain_values():
    from neuron_env.commands.fleet import FleetDocument
    from neuron_env.report.render import render

    doc = FleetDocument(stream([Entry("i-1", "f", unreachable="offline", detail="gone")],
                               {"engine": "files"}), views.text)
    plain = doc.serialize()
    assert isinstance(plain["instances"], list) and plain["instances"][0]["id"] == "i-1"
    assert json.loads(render(doc, "json")) == json.loads(json.dumps(plain))
