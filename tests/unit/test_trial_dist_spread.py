"""Issue #49 section 4 for the distributed trial: each rank records its timed steps, the reader
of RUN_DIR and of a --baseline file checks them like any untrusted input, the views show the
run's spread, and a cost or speed ratio inside both runs' spread names no winner. Pure: the
timings are injected, nothing is timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_env.cost import prices
from neuron_env.errors import EXIT_CONFIG, BadInput
from neuron_env.trial import dist_command
from neuron_env.trial import distributed as dist
from neuron_env.trial.dist_command import CostOptions
from neuron_env.trial.options import TrialOptions
from tests.unit.test_trial_collect import WORLD, make_run

STEADY = [0.100, 0.101, 0.099, 0.100, 0.102, 0.100, 0.098, 0.101]
WIDE = [0.06, 0.14, 0.08, 0.12, 0.10, 0.07, 0.13, 0.10]  # same median, quartiles ±30%
PRICE = prices.Price(3.6, None, "us-east-1", "flag", on_host=True)


def _thr(samples: list[float], batch: int = 32) -> dict:
    step = sorted(samples)[len(samples) // 2]
    return {"global_batch": batch, "samples_per_s": batch / step, "step_s": step,
            "step_samples_s": samples}


def _base(samples: list[float] | None, batch: int = 32) -> dict:
    this, _ = dist_command.cost_result(_thr(samples or STEADY, batch), PRICE, False,
                                       "cpu x2 (baseline)", None)
    assert this is not None
    doc = dict(this.details["this"], schema=dist_command.BASELINE_SCHEMA)
    if samples is None:
        doc.pop("step_samples_s")
    return doc


def _line(this: list[float], base: dict) -> tuple[str, dict]:
    res, _ = dist_command.cost_result(_thr(this), PRICE, False, "cpu x2", base)
    return res.details["comparison"]["line"], res.details["comparison"]


def test_a_ratio_beyond_both_spreads_names_the_winner():
    line, cmp_ = _line([x * 0.5 for x in STEADY], _base(STEADY))
    assert "50% cheaper per 1,000 samples than cpu x2 (baseline)" in line
    assert "beyond both runs' spread" in line and "not distinguishable" not in line
    assert cmp_["cost_distinguishable"] is True and cmp_["throughput_distinguishable"] is True


def test_a_ratio_inside_the_spread_is_not_distinguishable():
    # medians 10% apart, but the baseline's quartiles span ±30%: no winner
    line, cmp_ = _line([x * 0.9 for x in STEADY], _base(WIDE))
    assert "not distinguishable" in line and "cheaper" not in line, line
    assert "cost ratio 0.90 by the medians" in line and "--iterations" in line
    assert cmp_["cost_distinguishable"] is False and cmp_["cost_ratio"] == pytest.approx(0.9)


def test_an_old_baseline_without_samples_keeps_the_honest_wording():
    line, cmp_ = _line(STEADY, _base(None))
    assert "one run each, their spread not recorded" in line
    assert cmp_["cost_distinguishable"] is None


def test_a_noisy_run_says_so_with_its_cost_range():
    spiky = [*STEADY[:7], 1.5]  # one step 15x the median
    res, _ = dist_command.cost_result(_thr(spiky), PRICE, False, "cpu x2", None)
    sp = res.details["spread"]
    assert sp["usd_per_1000_samples_low"] <= sp["usd_per_1000_samples_high"]
    assert "timed steps" in res.summary and "NOISY" in res.summary
    assert "--iterations" in res.summary


def _baseline_file(tmp_path: Path, samples: object) -> str:
    doc = _base(STEADY)
    doc["step_samples_s"] = samples
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    return str(path)


HOSTILE_SAMPLES = {
    "NaN": ([0.1, float("nan")], "step_samples_s[1]"),
    "Infinity": ([float("inf")], "step_samples_s[0]"),
    "negative": ([0.1, -0.1], "step_samples_s[1]"),
    "a 400-digit integer": ([10 ** 400], "step_samples_s[0]"),
    "a string": (["0.1"], "step_samples_s[0]"),
    "a bool": ([True], "step_samples_s[0]"),
    "a nested list": ([[0.1]], "step_samples_s[0]"),
    "not a list": ({"a": 1}, "not list"),
    "too many": ([0.1] * 1001, "1001 samples"),
    "a year-long step": ([3.2e7], "step_samples_s[0]"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_SAMPLES))
def test_hostile_step_samples_in_a_rank_file_are_one_clear_error(tmp_path, case):
    samples, says = HOSTILE_SAMPLES[case]
    run = make_run(tmp_path)
    doc = json.loads((run / "rank1.json").read_text())
    doc["step_samples_s"] = samples
    (run / "rank1.json").write_text(json.dumps(doc))  # NaN/Infinity as the bare words
    d = dist.DistOptions(world_size=WORLD)
    with pytest.raises(BadInput) as e:
        dist.collect(str(run), d)
    assert says in str(e.value) and "rank1.json" in str(e.value), str(e.value)
    assert e.value.exit_code == EXIT_CONFIG


@pytest.mark.parametrize("case", ["NaN", "a string", "too many", "not a list"])
def test_hostile_step_samples_in_a_baseline_are_one_clear_error(tmp_path, case):
    samples, says = HOSTILE_SAMPLES[case]
    path = _baseline_file(tmp_path, samples)
    with pytest.raises(BadInput) as e:
        dist_command.read_baseline(path)
    assert path in str(e.value), str(e.value)
    if case != "NaN":  # the one reader refuses the bare word NaN before any field is judged
        assert says in str(e.value)


def test_a_baseline_keeps_its_samples(tmp_path):
    assert dist_command.read_baseline(_baseline_file(tmp_path, STEADY))["step_samples_s"] == \
        STEADY


def _collected_report(tmp_path: Path, samples: dict[int, list[float]]) -> dist_command.Report:
    run = make_run(tmp_path)
    for r, xs in samples.items():
        doc = json.loads((run / f"rank{r}.json").read_text())
        doc["step_samples_s"] = xs
        (run / f"rank{r}.json").write_text(json.dumps(doc))
    return dist_command.run("python3", "flag", TrialOptions(model="builtin:mlp", device="cpu"),
                            dist.DistOptions(world_size=WORLD),
                            CostOptions(price_per_hour=3.6, collect=str(run)))


def test_the_views_show_each_rank_and_the_run_spread(tmp_path):
    rep = _collected_report(tmp_path, {0: STEADY, 1: [*STEADY[:7], 1.5]})
    thr = next(r for r in rep.results if r.id == "trial.distributed").details["throughput"]
    # each step as long as its slowest rank
    assert thr["step_samples_s"] == [*STEADY[:7], 1.5] and thr["spread"]["noisy"]
    text = rep.view(rep) if rep.view else ""
    assert "q1-q3 ms" in text and "Step spread (each step as long as its slowest rank)" in text
    assert "NOISY: the slowest iteration took 15.0x" in text and "1 of 8 steps outliers" in text
    ranks = text[text.index("Ranks"):].split("\n\n")[0].splitlines()
    assert ranks[2].split()[-1] == "steady" and ranks[3].split()[-1] == "NOISY", ranks
    md = rep.markdown(rep) if rep.markdown else ""
    assert "### Step spread" in md and "| q1-q3 ms | spread |" in md


def test_rank_files_without_samples_show_no_spread(tmp_path):
    rep = _collected_report(tmp_path, {0: STEADY})  # rank 1 from an older neuron-env
    thr = next(r for r in rep.results if r.id == "trial.distributed").details["throughput"]
    assert thr["spread"] is None and thr["step_samples_s"] is None
    text = rep.view(rep) if rep.view else ""
    assert "Step spread" not in text


def test_the_html_page_shows_each_rank_and_the_run_spread(tmp_path):
    from neuron_env.report import html_trial

    rep = _collected_report(tmp_path, {0: STEADY, 1: [*STEADY[:7], 1.5]})
    page = html_trial.render(rep)
    assert "<th>q1-q3 s</th>" in page and "step spread: median" in page
    assert "<b>NOISY</b>: " in page and "the slowest iteration took 15.0x" in page


def test_without_prices_the_throughput_ratio_is_judged_by_the_spread():
    free = prices.Price(None, None, "us-east-1", "table", note="no price")
    base, _ = dist_command.cost_result(_thr(WIDE), free, False, "cpu x2 (baseline)", None)
    doc = dict(base.details["this"], schema=dist_command.BASELINE_SCHEMA)
    res, _ = dist_command.cost_result(_thr([x * 0.9 for x in STEADY]), free, False, "cpu x2",
                                      doc)
    cmp_ = res.details["comparison"]
    assert cmp_["cost_ratio"] is None and cmp_["throughput_distinguishable"] is False
    assert "not distinguishable (throughput ratio 1.11 by the medians" in cmp_["line"]


def test_a_local_rank_file_with_bad_samples_shows_no_spread_and_no_error():
    from neuron_env.trial.collected import checked_samples

    assert checked_samples({"step_samples_s": [0.1, float("nan")]}) is None
    assert checked_samples({"step_samples_s": "x"}) is None
    assert checked_samples({"step_samples_s": [0.1, 0.2]}) == [0.1, 0.2]
