"""The HTML reports in a real browser: headless Chromium renders the trial page and a 300-node
fleet page (from `neuron-env fleet report --format html`) with no console message (no script
error, no load the page's Content-Security-Policy blocked), a screenshot that is not one flat
colour, and a name holding HTML shown as text (escaped in the DOM, no element injected). A
page with a deliberate script error and nothing drawn proves the checks catch both. One
Chromium run per page. Skips only where no Chromium is installed (.ci/run installs Debian's
`chromium`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_env.report.render import render
from tests.helpers import fleet_reports
from tests.helpers.html_pages import SKIP, browse, chromium, png_colours, report_of, trial_doc

pytestmark = pytest.mark.integration

EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def browser() -> str:
    found = chromium()
    if found is None:
        pytest.skip(SKIP)
    return found


def _shown_as_text(dom: str) -> None:
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom
    assert "<img" not in dom  # the DOM holds no element made from the name


def test_the_checks_catch_a_script_error_and_a_blank_page(browser, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>no_such_function();</script>'
                    "</body></html>")
    got = browse(browser, page, tmp_path / "run")
    assert any("no_such_function is not defined" in ln for ln in got.console), got.console
    assert png_colours(got.png) == 1


def test_the_trial_page_renders_clean_in_chromium(browser, tmp_path):
    doc = trial_doc()
    doc["target"]["model"] = EVIL
    page = tmp_path / "trial.html"
    page.write_text(render(report_of(doc), "html"), encoding="utf-8")
    got = browse(browser, page, tmp_path / "run")
    assert got.console == []
    assert png_colours(got.png) > 8
    _shown_as_text(got.dom)
    assert got.dom.count("<svg") == 2 and "Where the numbers drift" in got.dom


def test_a_300_node_fleet_page_renders_clean_in_chromium(browser, tmp_path):
    reports = tmp_path / "reports"
    fleet_reports.write_fleet(reports, fleet_reports.real_reports(tmp_path / "roots"), 300)
    evil = reports / "i-00000000000000007.json"  # a failing node (an old OS) named with HTML
    doc = json.loads(evil.read_text())
    doc["target"]["instance"]["instance_id"] = EVIL
    evil.write_text(json.dumps(doc))
    page = tmp_path / "fleet.html"
    p = subprocess.run([sys.executable, "-m", "neuron_env", "fleet", "report", str(reports),
                        "--format", "html"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr  # some nodes fail
    page.write_text(p.stdout, encoding="utf-8")
    got = browse(browser, page, tmp_path / "run")
    assert got.console == []
    assert png_colours(got.png) > 8
    _shown_as_text(got.dom)
    assert got.dom.index("Nodes not passing (9)") < got.dom.index("Checks across nodes (300")
    assert len(p.stdout) < 200_000


def test_trial_report_html_is_written_on_exit_2_too(tmp_path):
    """--report html:PATH gets a page on every exit: here a MODEL that is not one (exit 2)."""
    out = tmp_path / "trial.html"
    p = subprocess.run([sys.executable, "-m", "neuron_env", "trial", "not-a-model",
                        "--python", sys.executable, "--report", f"html:{out}"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "error (exit 2)" in page


def test_a_bad_report_spec_is_refused_before_any_work(tmp_path):
    p = subprocess.run([sys.executable, "-m", "neuron_env", "trial", "builtin:mlp",
                        "--python", str(tmp_path / "no-python"), "--report", "pdf:x"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--report 'pdf:x'" in p.stderr and "html" in p.stderr, p.stderr
    assert not Path("x").exists()


def test_a_real_trial_writes_the_same_page_to_stdout_and_to_its_report(torch_python, tmp_path):
    """A real trial (the emulated device, a perturbed matmul, --compile): --format html on
    stdout and --report html:PATH (and json:PATH beside it) from the one renderer; the page
    shows the drifting module and both timings."""
    from tests.helpers.cli import cli_env, run_cli

    page, doc = tmp_path / "t.html", tmp_path / "t.json"
    p = run_cli("trial", "builtin:transformer-block", "--python", torch_python, "--compile",
                "--iterations", "3", "--format", "html", "--report", f"html:{page}",
                "--report", f"json:{doc}", env=cli_env(NEURON_EMULATOR_FAULT="perturb"),
                timeout=300)
    assert p.returncode == 1, p.stderr
    assert p.stdout == page.read_text()
    eager = next(r for r in json.loads(doc.read_text())["results"] if r["id"] == "trial.eager")
    first = eager["details"]["first_divergence"]["module"]
    assert f"<code>{first}</code> (Linear" in p.stdout
    assert "<td>eager</td>" in p.stdout and "<td>compiled</td>" in p.stdout


@pytest.mark.slow
def test_the_trial_page_shows_what_its_text_says_in_chromium(browser, tmp_path):
    """Issue 48 items 7 and 8, as a browser shows them: the drift chart holds the module the
    text names (not only the largest errors over the whole step), the time chart has labelled
    ticks and a note on a noisy run, and the page renders clean. (The geometry itself, boxes
    within whiskers, is checked on the matplotlib axes in tests/unit/test_trial_truth.py.)"""
    import re

    doc = trial_doc()
    eager = next(r for r in doc["results"] if r["id"] == "trial.eager")
    eager["details"]["first_divergence"] = {
        "module": "encoder.layer.0.attention.self.query", "module_type": "Linear", "order": 6,
        "modules": 47, "why": "12 of 4096 elements outside tolerance", "max_abs_error": 0.003}
    eager["details"]["mismatches"] = [
        {"tensor": "grad.embeddings.word_embeddings.weight", "max_abs_error": 0.9, "ok": False},
        {"tensor": "output", "max_abs_error": 0.2, "ok": False}]
    doc["target"]["timing"]["eager"].update(max_s=7.5, median_s=0.5, min_s=0.45, stdev_s=2.1)
    page = tmp_path / "trial.html"
    page.write_text(render(report_of(doc), "html"), encoding="utf-8")
    got = browse(browser, page, tmp_path / "run")
    assert got.console == [] and png_colours(got.png) > 8
    svgs = re.findall(r"<svg.*?</svg>", got.dom, flags=re.S)
    drift = next(s for s in svgs if "first module out of tolerance" in s)
    assert "encoder.layer.0.attention.self.query" in drift
    timing = next(s for s in svgs if "seconds per call" in s)
    ticks = re.findall(r">\s*(\d+(?:\.\d+)?)\s*<", timing)
    assert len(set(ticks)) >= 3, ticks
    assert "the slowest iteration took 15.0x the median" in got.dom
