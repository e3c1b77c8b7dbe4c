"""A small fleet page in headless Chromium (#48 item 9 and 15, #49): `neuron-env fleet report
--format html` on real doctor reports, four of which fail the same way and one of which shares
another's instance id. What a person must see, stated here and checked in the rendered DOM:

- the failing nodes grouped by what fails: one row "4 nodes" with the OS fix shown once;
- the plot of nodes per status counts whole nodes: its axis ticks are whole numbers (not
  0.5, 1.5);
- "not run" (a node that did not report a check) is a different cell from "skip";
- the duplicate id shows its file names;
- no console message (no script, nothing the CSP blocked) and a screenshot that is a page.
The screenshot is kept in the test's folder (shot.png) for a person to look at."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.helpers import fleet_reports
from tests.helpers.html_pages import SKIP, browse, chromium, png_colours

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_fleet_page_groups_failures_and_counts_whole_nodes_in_chromium(tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip(SKIP)
    reports = tmp_path / "reports"
    fleet_reports.write_fleet(reports, fleet_reports.real_reports(tmp_path / "roots"), 12)
    old_os = json.loads((reports / "i-00000000000000007.json").read_text())
    for i in (20, 21, 22):  # three more nodes on the old OS: one failure, four nodes
        old_os["target"]["instance"]["instance_id"] = f"i-{i:017x}"
        (reports / f"i-{i:017x}.json").write_text(json.dumps(old_os))
    first = json.loads((reports / "i-00000000000000000.json").read_text())
    first["results"] = [r for r in first["results"] if r["id"] != "os.arch"]  # not run
    (reports / "i-00000000000000000.json").write_text(json.dumps(first))
    second = json.loads((reports / "i-00000000000000001.json").read_text())
    next(r for r in second["results"] if r["id"] == "os.arch")["status"] = "skip"
    (reports / "i-00000000000000001.json").write_text(json.dumps(second))
    (reports / "copy.json").write_text(json.dumps(second))  # the same instance id

    p = subprocess.run([sys.executable, "-m", "neuron_env", "fleet", "report", str(reports),
                        "--format", "html"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    page = tmp_path / "fleet.html"
    page.write_text(p.stdout, encoding="utf-8")
    got = browse(browser, page, tmp_path)
    assert got.console == []
    assert png_colours(got.png) > 8

    dom = got.dom
    fails = dom[dom.index("Nodes not passing (5)"):dom.index("<figure")]
    assert "2 kind(s) of failure" in fails and "<summary>4 nodes</summary>" in fails
    assert fails.count("os.release") == 1  # the OS failure and its fix: once, not 4 times
    svg = dom[dom.index("<svg"):dom.index("</svg>")]
    ticks = re.findall(r"<text[^>]*>\s*([0-9.]+)\s*</text>", svg)
    assert len(ticks) >= 3 and ticks[0] == "0" and all(t.isdigit() for t in ticks), ticks
    heat = dom[dom.index('<table class="heat">'):]
    assert 'class="c s-notrun" title="os.arch: not run"' in heat
    assert 'class="c s-skip" title="os.arch: skip"' in heat
    iid = "i-00000000000000001"
    assert f"{iid} (copy.json)" in dom and f"{iid} ({iid}.json)" in dom
