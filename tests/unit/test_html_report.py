"""The HTML reports (report/html*.py): self-contained (nothing the browser would fetch), every
value from a report escaped (in the SVG plots too), every trial section from the JSON document
alone, "not recorded" where a run did not record a field, tables and one line about the extra
without matplotlib, a 300-node fleet on a short page. The browser half: tests/integration/
test_html_browser.py."""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from typing import Any

from neuron_env.fleet.aggregate import Entry, aggregate
from neuron_env.report.render import render, render_error
from tests.helpers.html_pages import report_of, trial_doc

EVIL = "<img src=x onerror=alert(1)>"
EVIL_ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"


def _self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    tags = _tags(page)
    assert not {t for t, _ in tags} & {"script", "link", "iframe", "object", "embed", "img",
                                       "image", "audio", "video", "source", "base", "form"}
    for _tag, attrs in tags:  # nothing that loads: no src, and a link only to the page itself
        assert not {"src", "srcset", "background", "poster", "data", "action"} & set(attrs)
        assert all(v.startswith("#") for k, v in attrs.items() if k.endswith("href")), attrs
    low = page.lower()
    assert "@import" not in low and not re.search(r"url\((?!#)", low)  # url(#own-id) only
    # the only addresses on the page are the SVG namespaces (names, never fetched)
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def _tags(page: str) -> list[tuple[str, dict[str, str]]]:
    """Every element of the page with its attributes, as a browser's tokenizer sees them."""
    found: list[tuple[str, dict[str, str]]] = []

    class Reader(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, {k: v or "" for k, v in attrs}))

    Reader().feed(page)
    return found


def _hostile_trial() -> dict[str, Any]:
    doc = trial_doc()
    doc["target"]["model"] = EVIL
    eager = next(r for r in doc["results"] if r["id"] == "trial.eager")
    eager["summary"] = f"summary {EVIL}"
    eager["fix"] = f"fix {EVIL}"
    eager["details"]["first_divergence"]["module"] = EVIL
    eager["details"]["mismatches"][1]["tensor"] = f"grad.{EVIL}.weight"
    eager["details"]["first_divergence"]["module_type"] = "$x^2$ & <b>"
    fb = next(r for r in doc["results"] if r["id"] == "trial.fallback")
    fb["details"]["phases"] = {"forward": {"ops": [EVIL], "counts": {EVIL: 3}},
                               "backward": {"ops": [], "counts": {}}}
    return doc


def test_every_trial_value_is_escaped_in_the_page_and_in_its_plots():
    page = render(report_of(_hostile_trial()), "html")
    _self_contained(page)
    assert "<img" not in page and "&amp; <b>" not in page and "& <b>" not in page
    assert page.count(EVIL_ESCAPED) >= 6  # title, heading, summary, fix, module, op, plot label
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert EVIL_ESCAPED in svg  # the per-module plot's label: matplotlib escaped it too
    assert "$x^2$ &amp; &lt;b&gt;" in page  # a `$` stays text (no TeX)


def test_the_trial_page_has_every_section_from_the_json_document():
    page = render(report_of(trial_doc()), "html")
    _self_contained(page)
    assert 'class="verdict s-fail">FAIL (exit 1)' in page and "EMULATED device" in page
    # where the numbers drift: the first module out of tolerance, its place, a plot per module
    assert "<code>qkv</code> (Linear, module 2 of 8)" in page
    assert page.count('<span class="s-pass"') == 1 and page.count('<span class="s-fail"') == 1
    assert "largest abs error vs the CPU per module, over the whole step" in page
    assert "<code>mlp.0</code>" in page
    # eager vs compiled: a plot and the table, the speed-up
    assert "seconds per call" in page and "<td>compiled</td>" in page
    # 1.11x by the medians, but the two runs' spreads overlap: no winner is named (issue 48)
    assert "compiled vs eager: not distinguishable" in page
    # fallbacks by phase (this document: the eager ops and the compile ones) and no cost
    assert "eager (forward and backward)" in page and "<td>compile</td>" in page
    assert page.count("not recorded in this run") == 1  # the cost
    assert page.count("<svg") == 2


def test_fallbacks_by_phase_and_cost_beside_its_baseline():
    doc = trial_doc()
    fb = next(r for r in doc["results"] if r["id"] == "trial.fallback")
    fb["details"]["phases"] = {"forward": {"ops": ["aten::cumsum"], "counts": {
        "aten::cumsum": 2}}, "backward": {"ops": []}}
    page = render(report_of(doc), "html")
    assert "<td>forward</td>" in page and "<code>aten::cumsum</code> ×2" in page
    assert "eager (forward and backward)" not in page  # the phases, when recorded, replace it
    page = render(report_of(trial_doc("trial-distributed-cost.json")), "html")
    _self_contained(page)
    assert "<th>this run</th><th>baseline</th>" in page
    assert "cpu x2 (this host)</td><td>cpu x1 (this host)" in page.replace(
        '<td class="n">', "<td>")
    assert "USD per 1,000 samples" in page and "64% cheaper" in page
    assert "<h2>Ranks</h2>" in page


def test_a_document_without_the_optional_fields_says_not_recorded():
    doc = trial_doc()
    doc["target"].pop("timing")
    for r in doc["results"]:
        r.pop("details", None)
    page = render(report_of(doc), "html")
    assert page.count("not recorded in this run") == 4  # drift, time, fallbacks, cost


def test_without_matplotlib_the_page_is_tables_and_one_line_on_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    page = render(report_of(trial_doc()), "html")
    _self_contained(page)
    assert "<svg" not in page and "<td>compiled</td>" in page and "<code>qkv</code>" in page
    assert page.count("pip install &#x27;neuron-env[html]&#x27;") == 1


def test_an_error_is_an_html_page_too():
    page = render_error("neuron-env.trial/1", 2, {"code": "usage", "message": EVIL,
                                                  "hint": EVIL}, "html")
    _self_contained(page)
    assert "<img" not in page and page.count(EVIL_ESCAPED) == 2 and "exit 2" in page


def _doctor(i: int, node: str) -> dict[str, Any]:
    bad = i % 37 == 5
    results = [{"id": f"check.{k}", "category": "os", "status": "pass", "summary": "ok"}
               for k in range(20)]
    if bad:
        results[3] = {"id": "check.3", "category": "os", "status": "fail",
                      "summary": f"broken {EVIL}", "fix": "fix it",
                      "fix_command": f"sudo apt-get install {EVIL}"}
    if i % 11 == 2:
        results[7] = dict(results[7], status="warn", summary="meh")
    if i == 0:  # a check id holding HTML: in the heat map and the plot's labels
        results.append({"id": EVIL, "category": "os", "status": "warn", "summary": "x"})
    return {"schema": "neuron-env.doctor/1", "exit_code": 1 if bad else 0,
            "summary": {"pass": 19, "warn": 0, "fail": int(bad), "skip": 0, "error": 0},
            "target": {"instance": {"instance_id": node, "type": "trn2.48xlarge"}},
            "results": results}


def test_a_300_node_fleet_page_lists_failing_nodes_first_with_fixes_and_stays_short():
    entries = [Entry(id=(EVIL if i == 5 else f"i-{i:017x}"), source="files",
                     doc=_doctor(i, f"i-{i:017x}")) for i in range(300)]
    body = aggregate(entries, {"engine": "files", "inputs": ["dir"]})
    from neuron_env.fleet.views import html

    page = html(body)
    _self_contained(page)
    assert "<img" not in page and EVIL_ESCAPED in page
    failing = [i for i in range(300) if i % 37 == 5]
    first = page.index("Nodes not passing")
    assert f"<h2>Nodes not passing ({len(failing)})</h2>" in page
    # the failing nodes grouped by what fails (#48 item 15: 300 copies of one failure list):
    # the fix once, the 8 nodes that share it in its row, before the heat map
    assert page.count(f"<pre>sudo apt-get install {EVIL_ESCAPED}</pre>") == 1
    assert "<summary>8 nodes</summary>" in page and "1 kind(s) of failure" in page
    assert first < page.index("Checks across nodes")
    # the heat map: nodes with the same verdict and results share a row
    heat = page[page.index('<table class="heat">'):]
    # head, failing (with and without check.7's warning), the passing patterns (none,
    # check.7 warns, node 0's own check warns)
    assert heat.count("<tr>") == 1 + 2 + 3
    assert "check.3: fail" in heat and "check.7: warn" in heat
    assert f'title="{EVIL_ESCAPED}: warn"' in heat
    plot = page[page.index("<svg"):page.index("</svg>")]
    assert "nodes per status" in plot and EVIL_ESCAPED in plot
    assert len(page) < 200_000, len(page)


def test_a_fleet_page_from_reports_without_check_results():
    body = aggregate([Entry(id="i-1", source="ssm", unreachable="offline", detail="gone")],
                     {"engine": "ssm"})
    from neuron_env.fleet.views import html

    page = html(body)
    assert "no node sent check results" in page and "unreachable" in page


def test_any_other_report_is_a_page_of_its_checks():
    """doctor --report html:PATH: the verdict and every check with its fix, escaped."""
    doc = dict(_doctor(5, EVIL), tool={"name": "neuron-env", "version": "0"})
    page = render(report_of(doc), "html")
    _self_contained(page)
    assert "neuron-env doctor:" in page and "exit 1" in page and "<img" not in page
    assert f"<pre>sudo apt-get install {EVIL_ESCAPED}</pre>" in page
    assert page.count('<span class="badge s-pass">pass</span>') == 19
