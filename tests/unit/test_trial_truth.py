"""Issue 48 (reports that tell the truth) and the trial parts of issue 45 finding 11 and issue
49 section 4: timings with their spread (injected samples, no timed test), cost labels and skip
reasons, the price table's warnings, outside values in the text and Markdown views, the doctor
footer on an 80-column terminal and `--only` suggestions."""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import pytest

from neuron_env.cost import prices
from neuron_env.errors import UsageError
from neuron_env.report import noise, verdict
from neuron_env.report.model import Result
from neuron_env.trial import dist_command, runner, views
from neuron_env.util.wrap import fit
from tests.helpers.html_pages import report_of, trial_doc

FORGED = "x\n    ✓ forged check passed  (trial.forged)\n![](https://evil.example/p.png)"


def _timing(samples: list[float]) -> dict:
    import statistics

    return {"first_call_s": 1.0, "iterations": len(samples),
            "median_s": statistics.median(samples), "min_s": min(samples),
            "max_s": max(samples), "stdev_s": statistics.pstdev(samples),
            "samples_s": samples}


# -- noise (issue 49 section 4) -------------------------------------------------------------------
def test_a_steady_run_is_not_noisy_and_a_slow_outlier_is_counted():
    steady = noise.spread(_timing([0.50, 0.51, 0.49, 0.50, 0.52, 0.50, 0.49, 0.51]))
    assert steady and not steady["noisy"] and steady["outliers"] == 0
    spiky = noise.spread(_timing([0.50, 0.51, 0.49, 0.50, 7.5, 0.50, 0.49, 0.51]))
    assert spiky and spiky["noisy"] and spiky["outliers"] == 1
    assert any("15.0x the median" in w for w in spiky["warnings"])
    assert any("1 of 8 iterations were outliers" in w for w in spiky["warnings"])
    assert "--iterations 30" in noise.advice(spiky)


def test_without_samples_the_box_stays_inside_min_and_max():
    """The old record (median ± stdev only): the box is clipped to min..max, never past it."""
    s = noise.spread({"median_s": 0.5, "min_s": 0.45, "max_s": 7.5, "stdev_s": 2.0,
                      "iterations": 10})
    assert s and s["min_s"] <= s["low_s"] <= s["median_s"] <= s["high_s"] <= s["max_s"]
    assert s["box"] == "median ± stdev" and s["outliers"] is None and s["noisy"]


def test_a_speed_up_inside_the_noise_names_no_winner():
    eager = _timing([0.40, 0.90, 0.50, 0.70, 0.45, 0.80])
    compiled = _timing([0.30, 0.85, 0.35, 0.60, 0.40, 0.75])
    words = noise.speed_words(eager, compiled)
    assert words and words.startswith("compiled vs eager: not distinguishable")
    fast = _timing([0.10, 0.11, 0.10, 0.12, 0.10, 0.11])
    assert noise.speed_words(eager, fast) == "compiled 5.71x faster than eager"


def test_trial_compile_summary_says_not_distinguishable_and_views_show_the_spread():
    eager = _timing([0.40, 0.90, 0.50, 0.70, 0.45, 0.80])
    compiled = _timing([0.30, 0.85, 0.35, 0.60, 0.40, 7.5])
    res = Result("trial.compile", "trial", "pass", "torch.compile(backend='neuron'): OK; "
                 "steady median 0.5000s (1.14x faster than eager)")
    got = runner.with_noise(res, {"eager": eager, "compiled": compiled})
    assert "faster than eager)" not in got.summary.replace("by the medians", "")
    assert "not distinguishable" in got.summary and got.details["speed"]
    doc = trial_doc()
    doc["target"]["timing"] = {"eager": eager, "compiled": compiled}
    rep = report_of(doc)
    text = views.render_text(rep)
    assert "q1-q3 ms" in text and "NOISY" in text and "outliers" in text
    assert "--iterations" in text and "not distinguishable" in text
    assert "not distinguishable" in views.render_markdown(rep)


# -- cost (items 1, 2, 3) -------------------------------------------------------------------------
def _dist_report(**this_extra) -> dist_command.Report:
    doc = trial_doc("trial-distributed-cost.json")
    cost = next(r for r in doc["results"] if r["id"] == "trial.cost")
    cost["details"]["this"].update(this_extra)
    return report_of(doc)


def test_a_cpu_baseline_priced_as_a_gpu_instance_is_not_labelled_measured():
    base = {"label": "cpu x2 (g5.xlarge)", "emulated": False, "instance_type": "g5.xlarge",
            "on_host": False}
    assert verdict.cost_kind(base) == "priced as g5.xlarge, not run on one"
    assert verdict.cost_kind({"emulated": True}) == "rehearsal (emulated device)"
    assert verdict.cost_kind({"on_host": True}) == "measured"
    thr = {"samples_per_s": 100.0, "step_s": 0.32}
    price = prices.Price(21.5, "trn1.32xlarge", "us-east-1", "table", on_host=False)
    baseline = dict(base, samples_per_s=50.0, usd_per_1000_samples=0.0056)
    res, _ = dist_command.cost_result(thr, price, True, "neuron x2 (trn1.32xlarge)", baseline)
    assert res.summary.startswith("REHEARSAL, not a Trainium price")
    line = res.details["comparison"]["line"]
    assert line.startswith("NOT A MEASUREMENT of the instances priced")
    assert "neuron x2 (trn1.32xlarge) (rehearsal (emulated device))" in line
    assert "priced as g5.xlarge, not run on one" in line
    rows = dist_command.cost_rows(report_of({**trial_doc("trial-distributed-cost.json"),
                                             "results": [_doc(res)]}))
    assert [r[-1] for r in rows[:2]] == ["rehearsal (emulated device)",
                                         "priced as g5.xlarge, not run on one"]


def _doc(r: Result) -> dict:
    from tests.helpers.html_pages import FIELDS

    return {k: getattr(r, k) for k in FIELDS}


def test_implausible_timings_are_the_reason_not_a_wrong_result():
    """Issue 48 item 3: --collect flagged an impossible scaling efficiency; the results match,
    so the cost is skipped for the timings, never for results that 'differ'."""
    main = Result("trial.distributed", "trial", "warn", "match; efficiency 3.1",
                  details={"throughput": {"samples_per_s": 9.0}})
    why = dist_command.no_price_reason(main, SimpleNamespace(
        info={"implausible": "scaling efficiency 3.10 > 1.5"}))
    assert why and "results match one process" in why and "timings are suspect" in why
    assert "differ" not in why
    res, _ = dist_command.cost_result(None, prices.Price(2.0, None, "us-east-1", "flag"), False,
                                      "cpu", None, why)
    assert res.summary == why


def test_a_priced_type_the_release_does_not_support_is_a_warning():
    m = __import__("neuron_env.matrix.catalog", fromlist=["select"]).select(None)
    supported = [t.name for f in m.instances for t in f.types]
    assert prices.unsupported(supported[0]) is None
    assert prices.unsupported("g5.xlarge") is None  # a GPU baseline is not judged
    if "trn1.32xlarge" not in supported:
        warn = prices.unsupported("trn1.32xlarge")
        assert warn and f"Neuron {m.release}" in warn
        thr = {"samples_per_s": 100.0, "step_s": 0.32}
        price = prices.Price(21.5, "trn1.32xlarge", "us-east-1", "table", warning=warn)
        res, _ = dist_command.cost_result(thr, price, False, "neuron x2", None)
        assert res.status == "warn" and warn in res.summary and res.fix


def test_the_price_table_has_no_price_without_a_source():
    for row in prices.load_table():
        if row["source"] == "unsourced":
            assert row.get("usd_per_hour") is None
        if row["instance_type"].startswith(("trn2", "trn3")):
            assert row["source"] == "unsourced" or row["source"].startswith("https://")


# -- outside values in the text and Markdown views (issue 45 finding 11) ---------------------------
def _no_forged_line(text: str, markdown: bool = False) -> None:
    assert not any(ln.lstrip().startswith("✓ forged") for ln in text.splitlines()), text
    assert not markdown or not re.search(r"(?<!\\)!\[|(?<!\\)\]\(", text), text


def test_one_process_views_never_forge_a_line_or_markup():
    doc = trial_doc()
    doc["target"]["model"] = FORGED
    eager = next(r for r in doc["results"] if r["id"] == "trial.eager")
    eager["summary"], eager["fix"] = FORGED, FORGED
    doc["target"]["timing"] = {FORGED: doc["target"]["timing"]["eager"]}
    rep = report_of(doc)
    _no_forged_line(views.render_text(rep))
    md = views.render_markdown(rep)
    _no_forged_line(md, markdown=True)
    assert "\\!\\[\\](https://evil.example/p.png)" in md


def test_distributed_views_never_forge_a_line_from_a_host_or_a_label():
    doc = trial_doc("trial-distributed-cost.json")
    doc["target"]["model"] = FORGED
    dist = next(r for r in doc["results"] if r["id"] == "trial.distributed")
    dist["details"]["ranks"][0]["host"] = FORGED
    cost = next(r for r in doc["results"] if r["id"] == "trial.cost")
    cost["details"]["baseline"]["label"] = FORGED
    cost["details"]["this"]["label"] = FORGED
    cost["summary"] = FORGED
    rep = report_of(copy.deepcopy(doc))
    _no_forged_line(dist_command.render_text(rep))
    md = dist_command.render_markdown(rep)
    _no_forged_line(md, markdown=True)
    assert md.count("\\!\\[\\](https://evil.example/p.png)") >= 4


# -- messages (items 12, 16) ----------------------------------------------------------------------
def test_only_with_a_typo_suggests_the_id():
    from neuron_env.checks import select

    with pytest.raises(UsageError) as e:
        select(["backend.torh"], [])
    assert "did you mean 'backend.torch'?" in (e.value.hint or "")


def test_one_option_belongs_several_belong():
    from neuron_env.trial import distributed as dist
    from neuron_env.trial.options import TrialOptions

    d = dist.DistOptions(world_size=2)
    with pytest.raises(UsageError, match=r"--compile belongs to the one-process trial"):
        dist.validate(TrialOptions(model="builtin:mlp", compile=True), d)
    with pytest.raises(UsageError, match=r"--compile, --shapes belong to the one-process"):
        dist.validate(TrialOptions(model="builtin:mlp", compile=True, shapes=((8,),)), d)


def test_the_doctor_footer_fits_80_columns():
    from neuron_env.report import text

    m = {"release": "2.34", "origin": "user", "date": "2026-11-20", "sha256": "ab" * 32,
         "path": "/home/someone/.config/neuron-env/matrices/" + "deep/" * 8 + "neuron-2.34.toml"}
    lines = fit(text.matrix_line(m), 80).splitlines()
    assert lines[0].startswith("matrix: Neuron 2.34 (user, 2026-11-20, sha256 abababababab")
    assert lines[1] == "  " + m["path"] and all(len(ln) <= 80 for ln in lines[:1])
    assert re.match(r"^matrix: .*\)$", lines[0])


# -- JUnit (item 14), read by a real JUnit consumer --------------------------------------------
def test_trial_junit_names_the_model_uses_measured_times_and_omits_unknowns(tmp_path):
    from junitparser import Failure, JUnitXml

    from neuron_env.report.render import render

    doc = trial_doc()
    for r in doc["results"]:
        r.pop("duration_s", None)
    results = tuple(runner.to_result({"name": r["id"].partition(".")[2], "status": r["status"],
                                      "summary": r["summary"], **(r.get("details") or {})},
                                     False, views_opts()) for r in doc["results"])
    rep = report_of(doc)
    rep = type(rep)(schema=rep.schema, tool=rep.tool, matrix=None, target=rep.target,
                    results=results, exit_code=rep.exit_code, extra=rep.extra)
    path = tmp_path / "trial.xml"
    path.write_text(render(rep, "junit"))
    xml = JUnitXml.fromfile(str(path))
    suite = next(iter(xml))
    props = {p.name: p.value for p in suite.properties()}
    assert "matrix" not in props and "None" not in props.values()
    assert props["model"] == "builtin:transformer-block" and "rehearsal" in props
    cases = {c.name: c for c in suite}
    assert "trial[builtin:transformer-block].eager" in cases
    eager = cases["trial[builtin:transformer-block].eager"]
    assert eager.time > 1.0  # first call + the timed iterations, not 0.000000
    assert any(isinstance(x, Failure) for x in eager.result)
    memory = cases["trial[builtin:transformer-block].memory"]
    assert memory.time is None and 'time="0.000000"' not in path.read_text()


def views_opts():
    from neuron_env.trial.options import TrialOptions

    return TrialOptions(model="builtin:transformer-block")


# -- the fallback table (item 10) ---------------------------------------------------------------
def test_a_compile_that_failed_is_not_reached_never_pass():
    from neuron_env.report import html_trial

    doc = trial_doc()
    comp = next(r for r in doc["results"] if r["id"] == "trial.compile")
    comp["status"], comp["summary"] = "fail", "torch.compile failed: Unsupported: aten::nonzero"
    comp["details"] = {"backend": "neuron", "root_cause": "Unsupported", "fallback_ops": []}
    fb = next(r for r in doc["results"] if r["id"] == "trial.fallback")
    fb["details"]["phases"] = {"forward": {"ops": []}, "compile": {"ops": []}}
    section = html_trial.fallbacks(report_of(doc))
    row = section[section.index("<td>compile</td>"):]
    row = row[:row.index("</tr>")]
    assert "not reached" in row and "every op ran on the device" not in row
    assert "s-pass" not in row
    ok = trial_doc()
    fb = next(r for r in ok["results"] if r["id"] == "trial.fallback")
    fb["details"]["phases"] = {"compile": {"ops": []}}
    assert "every op ran on the device" in html_trial.fallbacks(report_of(ok))


# -- the plots (items 7, 8): their data and geometry -------------------------------------------
def _drifting_bert() -> dict:
    """A BERT-like drift: the first module out of tolerance is attention.self.query (module 7
    of 47), while the largest errors over the whole step are the embeddings' gradients."""
    doc = trial_doc()
    eager = next(r for r in doc["results"] if r["id"] == "trial.eager")
    eager["details"]["first_divergence"] = {
        "module": "encoder.layer.0.attention.self.query", "module_type": "Linear", "order": 6,
        "modules": 47, "why": "12 of 4096 elements outside tolerance", "max_abs_error": 0.003}
    eager["details"]["mismatches"] = [
        {"tensor": "grad.embeddings.word_embeddings.weight", "max_abs_error": 0.9, "ok": False},
        {"tensor": "grad.embeddings.LayerNorm.weight", "max_abs_error": 0.5, "ok": False},
        {"tensor": "output", "max_abs_error": 0.2, "ok": False}]
    return doc


def test_the_drift_chart_shows_and_highlights_the_module_the_text_names():
    from neuron_env.report import html_trial

    doc = _drifting_bert()
    d = next(r for r in doc["results"] if r["id"] == "trial.eager")["details"]
    labels, values, hi, title = html_trial.drift_bars(d)
    assert hi is not None and labels[hi] == "encoder.layer.0.attention.self.query"
    assert values[hi] == pytest.approx(0.003) and "first module out of tolerance" in title
    assert "embeddings.word_embeddings" in labels  # the others still shown, after it
    page = html_trial.drift(report_of(doc))
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "encoder.layer.0.attention.self.query" in svg


def _geometry(rows):
    import matplotlib

    matplotlib.use("svg", force=True)
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    from neuron_env.report import plots

    fig, ax = plots.ranges_figure(rows, title="t")
    fig.canvas.draw()
    boxes = [p for p in ax.patches if isinstance(p, Rectangle)]
    whiskers = [c for c in ax.collections if isinstance(c, LineCollection)]
    spans = []
    for c in whiskers:
        for seg in c.get_segments():
            (x0, y0), (x1, y1) = seg
            if y0 == y1:  # a horizontal whisker line
                spans.append((round(y0), min(x0, x1), max(x0, x1)))
    labels = [t.get_text() for t in ax.get_xticklabels()
              if t.get_text() and ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]
    import matplotlib.pyplot as plt

    plt.close(fig)
    return boxes, spans, labels


def test_time_plot_boxes_lie_within_their_whiskers_and_ticks_are_labelled():
    """Issue 48 item 8: a run with a 7.5 s outlier (median 0.5 s) and no samples recorded drew
    its median ± stdev box past the whisker (and below 0 on the log axis); one decade gave one
    tick label."""
    noisy = {"first_call_s": 1.3, "iterations": 10, "median_s": 0.5, "min_s": 0.45,
             "max_s": 7.5, "stdev_s": 2.1}
    steady = _timing([0.23, 0.3, 0.5, 0.6, 0.92, 0.59, 0.61])
    for rows in ([("eager", noisy), ("compiled", steady)], [("eager", steady)]):
        boxes, spans, labels = _geometry(rows)
        assert len(boxes) == len(rows) and len(spans) == len(rows)
        for box, (_y, lo, hi) in zip(boxes, sorted(spans), strict=True):
            assert lo <= box.get_x() and box.get_x() + box.get_width() <= hi * (1 + 1e-9)
        assert len(labels) >= 3, labels


# -- fix lines from the arguments given (item 11) -------------------------------------------------
def test_the_cost_fix_never_asks_for_the_instance_type_given():
    thr = {"samples_per_s": 100.0, "step_s": 0.32}
    given = prices.Price(None, "trn2.48xlarge", "us-east-1", "table", note="unsourced")
    res, _ = dist_command.cost_result(thr, given, False, "neuron x2", None)
    assert res.fix and "--instance-type" not in res.fix and "trn2.48xlarge" in res.fix
    none = prices.Price(None, None, "us-east-1", "none", note="no instance type")
    res, _ = dist_command.cost_result(thr, none, False, "cpu", None)
    assert res.fix and "--instance-type T" in res.fix


def _inside(name: str):
    import importlib.util
    import sys

    from tests.helpers.cli import REPO

    path = REPO / "neuron_env/inside" / f"{name}.py"
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_for_test", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(path.parent))


def test_an_environment_import_failure_points_at_doctor_not_the_module():
    hint = _inside("_trial_common").environment_hint
    got = hint("RuntimeError: operator torchvision::nms does not exist", "/venv/bin/python")
    assert got and "neuron-env doctor --python /venv/bin/python" in got
    assert "torchvision::nms" in got and "fix the module" not in got
    assert hint("NameError: name 'x' is not defined", "py") is None


def test_no_torch_names_the_interpreter_and_the_rehearsal_venv(tmp_path):
    from neuron_env.commands.trial import no_torch

    failed = Result("trial.import", "trial", "fail", "import torch failed: ModuleNotFoundError: "
                    "No module named 'torch'", fix="install torch into the target")
    venv = tmp_path / "neuron-rehearsal"
    got = no_torch(failed, "/usr/bin/python3", "PATH (python3)", str(venv))
    assert "in /usr/bin/python3, chosen by PATH (python3)" in got.summary
    assert got.fix and "neuron-env install --python /usr/bin/python3" in got.fix
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    got = no_torch(failed, "/usr/bin/python3", "PATH (python3)", str(venv))
    assert got.fix and f"--python {venv}/bin/python" in got.fix


def test_summaries_are_cut_at_a_word_never_inside_one():
    from neuron_env.guards.text import cut
    from neuron_env.report.verdict import one_line

    text = "trial.compile: aten::nonzero is not supported by the neuron compiler: its unsupported"
    got = one_line(text, 80)
    assert got.endswith("its…") and len(got) <= 80
    assert cut("does not exist here", 8) == "does…"
    assert cut("short", 80) == "short"
    assert _inside("_trial_common").cut("x " * 300, 400).endswith("x...")


def test_every_type_the_default_release_supports_has_a_row_that_says_what_is_known():
    """Issue 48 item 2: a Trn2/Trn3 type the default release targets is in the table, with a
    sourced price or, plainly, none known (and when it was searched for); never a made-up
    figure, never 'not in the price table'."""
    from neuron_env.matrix.catalog import select

    m = select(None)
    rows = prices.load_table()
    for t in (t.name for f in m.instances for t in f.types):
        row = prices.lookup(t, "us-east-1", rows)
        assert row is not None, t
        assert row.get("usd_per_hour") is not None or (
            row["source"] == "unsourced" and "no AWS-published on-demand price" in row["note"])
        price = prices.choose(None, t, "us-east-1", False)
        assert price.warning is None and (price.usd_per_hour is not None or
                                          "no sourced price" in (price.note or ""))


def test_a_one_process_cost_carries_its_spread_and_says_when_it_is_noisy():
    """Issue 49 section 4: two identical runs gave $0.3537 and $0.4632 per 1,000 samples; the
    figure is a range, and a noisy run says so."""
    from neuron_env.trial.cost import cost

    ok = (Result("trial.eager", "trial", "pass", "ok"),)
    price = prices.Price(3.6, None, "us-east-1", "flag", on_host=True)
    steady = _timing([0.50, 0.51, 0.49, 0.50, 0.52, 0.50, 0.49, 0.51])
    res = cost(ok, {"eager": steady}, 32, price, False, "cpu")
    low, high = res.details["spread"]["usd_per_1000_samples_low"], \
        res.details["spread"]["usd_per_1000_samples_high"]
    assert low <= res.details["this"]["usd_per_1000_samples"] <= high
    assert "per 1,000 samples" in res.summary and "NOISY" not in res.summary
    spiky = _timing([0.50, 0.51, 0.49, 0.50, 7.5, 0.50, 0.49, 0.51])
    res = cost(ok, {"eager": spiky}, 32, price, False, "cpu")
    assert "NOISY" in res.summary and "--iterations" in res.summary


def test_the_timing_table_with_its_spread_fits_80_columns():
    text = views.render_text(report_of(trial_doc()))
    table = text[text.index("Timing ("):].split("\n\n")[0].splitlines()[1:4]
    assert table[0].split() == ["run", "first", "s", "median", "ms", "q1-q3", "ms",
                                "min-max", "ms", "n", "spread"]
    assert all(len(ln) <= 80 for ln in table), table


def test_a_side_by_side_of_single_runs_says_so():
    thr = {"samples_per_s": 100.0, "step_s": 0.32}
    price = prices.Price(21.5, None, "us-east-1", "flag", on_host=True)
    base = {"label": "cpu x2", "samples_per_s": 90.0, "usd_per_1000_samples": 0.07,
            "on_host": True}
    res, _ = dist_command.cost_result(thr, price, False, "cpu x2", base)
    assert "one run each, their spread not recorded" in res.details["comparison"]["line"]
