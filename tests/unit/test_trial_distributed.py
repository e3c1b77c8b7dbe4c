"""Pure parts of `trial --world-size`: the cost maths, the price table and the price choice,
the Pricing API's answer parsed, the verdict from the ranks' documents, the launch lines."""

from __future__ import annotations

import json

import pytest

from neuron_env.aws.pricing import filters, hourly_usd
from neuron_env.cost import maths, prices
from neuron_env.errors import UsageError
from neuron_env.trial import distributed as dist
from neuron_env.trial.dist_command import cost_result
from neuron_env.trial.options import TrialOptions
from tests.helpers.fake_pricing import product


# -- cost maths ------------------------------------------------------------------------------------
def test_dollars_per_thousand_samples_and_per_step():
    assert maths.per_thousand(3.6, 1000.0) == pytest.approx(0.001)  # 3.6M samples/h for $3.6
    assert maths.per_step(36.0, 0.5) == pytest.approx(0.005)
    assert maths.per_thousand(1.0, 0.0) is None and maths.per_step(1.0, 0.0) is None
    f = maths.figures(21.5, 200.0, 0.04)
    assert f["usd_per_1000_samples"] == pytest.approx(21.5 / 720.0)


def test_baseline_ratio_and_the_one_line():
    this = {"label": "trn", "samples_per_s": 300.0, "usd_per_1000_samples": 0.02}
    base = {"label": "gpu", "samples_per_s": 200.0, "usd_per_1000_samples": 0.04}
    r = maths.compare(this, base)
    assert r == {"throughput_ratio": 1.5, "cost_ratio": 0.5}
    assert maths.verdict_line(this, base, r) == ("trn is 50% cheaper per 1,000 samples than gpu "
                                                 "(cost ratio 0.50, throughput ratio 1.50)")
    dearer = maths.compare(base, this)
    assert "100% dearer" in maths.verdict_line(base, this, dearer)
    none = maths.compare(dict(this, usd_per_1000_samples=None), base)
    assert none["cost_ratio"] is None and "no cost ratio" in maths.verdict_line(this, base, none)


# -- the price table and the choice of price -------------------------------------------------------
def test_every_table_entry_has_a_source_and_a_date():
    rows = prices.load_table()
    assert {r["instance_type"] for r in rows} >= {"trn1.32xlarge", "trn2.48xlarge",
                                                  "p4d.24xlarge", "p5.48xlarge", "g5.xlarge"}
    for r in rows:
        assert r["source"].startswith("https://") or r["source"] == "unsourced"
        assert (r["source"] == "unsourced") == (r.get("usd_per_hour") is None), r


def test_a_table_without_dates_is_refused(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('format = 1\n[[price]]\ninstance_type = "x"\nregion = "us-east-1"\n'
                   'source = "https://e"\n')
    with pytest.raises(ValueError, match="date"):
        prices.load_table(bad)


def test_a_priced_entry_from_a_third_party_page_says_so():
    for r in prices.load_table():
        if r.get("usd_per_hour") is not None and "aws.amazon.com" not in r["source"]:
            assert "third-party" in r.get("note", ""), r


@pytest.mark.parametrize("extra, match", [
    ('usd_per_hour = -1.0\n', "usd_per_hour"),
    ('usd_per_hour = "21.50"\n', "usd_per_hour"),
    ('note = ""\n', "note"),
    ('note = 3\n', "note"),
])
def test_a_bad_price_or_note_is_refused(tmp_path, extra, match):
    bad = tmp_path / "p.toml"
    bad.write_text('format = 1\n[[price]]\ninstance_type = "x"\nregion = "us-east-1"\n'
                   'source = "https://e"\ndate = "2026-01-01"\n' + extra)
    with pytest.raises(ValueError, match=match):
        prices.load_table(bad)


def test_the_entry_note_travels_with_the_price():
    p4d = prices.choose(None, "p4d.24xlarge", "us-east-1", False)
    assert p4d.usd_per_hour == 32.77 and p4d.note is not None
    assert p4d.note.startswith("price table, region from flag; third-party") and \
        "check with --aws" in p4d.note
    p5 = prices.choose(None, "p5.48xlarge", "us-east-1", False)
    assert p5.usd_per_hour is None and p5.note is not None
    assert "no sourced price" in p5.note and "June 2025" in p5.note
    trn2 = prices.choose(None, "trn2.48xlarge", "us-east-2", False)
    assert trn2.usd_per_hour is None and trn2.note is not None and trn2.note.startswith(
        "the price table has no sourced price for trn2.48xlarge in us-east-2: "
        "give --price-per-hour X or --aws; no AWS-published on-demand price")


def test_price_choice_flag_table_unsourced_and_missing():
    p = prices.choose(4.2, None, None, False)
    assert (p.usd_per_hour, p.source) == (4.2, "flag")
    t = prices.choose(None, "TRN1.32xlarge", "us-east-1", False)
    assert t.usd_per_hour == 21.5 and t.source == "table" and "2026-06-25" in t.reference
    u = prices.choose(None, "trn2.48xlarge", "us-east-1", False)
    assert u.usd_per_hour is None and "no sourced price" in u.note
    m = prices.choose(None, "trn1.32xlarge", "ap-south-2", False)
    assert m.usd_per_hour is None and "not in the price table" in m.note
    with pytest.raises(UsageError):
        prices.choose(None, "trn1.32xlarge", "not a region", False)
    with pytest.raises(UsageError):
        prices.choose(-1.0, None, None, False)


def test_pricing_api_answer_parsed():
    assert hourly_usd([product("trn2.48xlarge", "us-east-1", 44.5)]) == 44.5
    assert hourly_usd([]) is None
    assert hourly_usd([json.dumps({"terms": {"OnDemand": {"a": {"priceDimensions": {
        "b": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0000000000"}}}}}}})]) is None
    assert {f["Field"] for f in filters("trn1.2xlarge", "us-west-2")} == {
        "instanceType", "regionCode", "operatingSystem", "tenancy", "preInstalledSw",
        "capacitystatus"}


def test_cost_result_labels_a_rehearsal_and_skips_without_a_price():
    thr = {"samples_per_s": 100.0, "step_s": 0.32}
    price = prices.Price(36.0, "trn1.32xlarge", "us-east-1", "flag")
    res, this = cost_result(thr, price, True, "neuron x2", None)
    assert res.status == "pass" and "REHEARSAL" in res.summary and this["emulated"] is True
    assert this["usd_per_1000_samples"] == pytest.approx(0.1)
    none = prices.Price(None, None, "us-east-1", "none", note="no instance type")
    res, _ = cost_result(thr, none, False, "cpu", None)
    assert res.status == "skip" and "no instance type" in res.summary
    res, _ = cost_result(None, price, False, "cpu", None)
    assert res.status == "skip"


# -- the verdict ---------------------------------------------------------------------------------
def _ok(tensor="w", excess=0.1, ok=True, phase="step 1"):
    return {"ok": ok, "tensor": tensor, "phase": phase, "max_abs": 1e-8 if ok else 0.5,
            "excess": excess, "mismatched": 0 if ok else 4, "numel": 4}


def _rank(rank, **over):
    doc = {"rank": rank, "host": "h", "first_step_s": 0.1, "step_s": 0.02, "shard": [rank * 4,
           rank * 4 + 4], "initial": [], "outputs": [_ok("output")],
           "losses": [_ok("loss")], "params_checked": 2, "worst_param": _ok("w", 0.3),
           "bad_params": []}
    doc.update(over)
    return dist.RankState(rank, "finish", True, doc, None, 0)


REF = {"batch": 8, "per_rank_batch": 4, "one_rank_step_s": 0.01, "emulated": False}
D = dist.DistOptions(world_size=2)


def test_pass_names_the_worst_tensor_and_the_scaling():
    r = dist.verdict(dist.DistRun(REF, (_rank(0), _rank(1)), 1.0), D, 60, "gloo")
    assert r.status == "pass" and "worst w on rank 0" in r.summary
    thr = r.details["throughput"]
    assert thr["samples_per_s"] == pytest.approx(400.0)  # 8 samples / 0.02 s
    assert thr["one_rank_samples_per_s"] == pytest.approx(400.0)  # 4 / 0.01
    assert thr["scaling_efficiency"] == pytest.approx(0.5)


def test_a_rank_whose_shard_output_differs_is_named():
    bad = _rank(1, outputs=[_ok("output", 9.0, ok=False)])
    r = dist.verdict(dist.DistRun(REF, (_rank(0), bad), 1.0), D, 60, "gloo")
    assert r.status == "fail" and "rank 1's output on its shard differs" in r.summary
    assert "rank 0 matched" in r.summary and r.details["worst"]["rank"] == 1


def test_parameters_that_differ_after_matching_outputs_blame_the_reduction():
    bad = _rank(0, worst_param=_ok("fc.weight", 7.0, ok=False, phase="after step 1"),
                bad_params=["fc.weight"])
    r = dist.verdict(dist.DistRun(REF, (bad, _rank(1)), 1.0), D, 60, "gloo")
    assert r.status == "fail" and "fc.weight (after step 1)" in r.summary
    assert "on rank 0" in r.summary and "1 of 2 parameters" in r.summary


def test_unseeded_initialisation_is_named():
    bad = _rank(1, initial=[_ok("w", ok=False, phase="initial")])
    r = dist.verdict(dist.DistRun(REF, (_rank(0), bad), 1.0), D, 60, "gloo")
    assert "rank 1 built different initial parameters" in r.summary


def test_launch_failures_name_the_rank_and_what_it_did():
    hung = dist.RankState(1, "model", False, None, None, -9, True)
    waiting = dist.RankState(0, "wrap ddp", True, None, None, -9, True)
    r = dist.verdict(dist.DistRun(REF, (waiting, hung), 60.0, timed_out=True), D, 60, "gloo")
    assert r.timed_out and r.status == "fail"
    assert "rank 1 hung in model (never entered the collective)" in r.summary
    assert "rank 0 waited inside wrap ddp" in r.summary
    dead = dist.RankState(1, "step 1", True, None, "Traceback\nRuntimeError: boom", 3)
    r = dist.verdict(dist.DistRun(REF, (waiting, dead), 12.0, died=1), D, 60, "gloo")
    assert not r.timed_out and r.status == "fail"  # a death is not a time-out (exit 1)
    assert "rank 1 died during step 1: it exited with code 3: RuntimeError: boom" in r.summary
    none = dist.RankState(0, "start-up", False, None, None)
    r = dist.verdict(dist.DistRun(REF, (none, none), 60.0, timed_out=True, port=29999), D, 60,
                     "gloo")
    assert "rendezvous at 127.0.0.1:29999" in r.summary


@pytest.mark.parametrize("rc, timed_out, error, says, fix", [
    (-9, False, None, "was killed by signal 9 (SIGKILL) 5.0s into the 120s limit", "dmesg"),
    (-11, False, None, "was killed by signal 11 (SIGSEGV) 5.0s into the 120s limit", "native"),
    (17, False, None, "exited with code 17 without a Python error", "os._exit"),
    (3, False, "Traceback\nValueError: bad", "exited with code 3: ValueError: bad", "traceback"),
    (3, False, "Traceback\nRuntimeError: CUDA out of memory. Tried", "ran out of memory", "batch"),
    (-9, True, None, "timed out after 120s", "--timeout"),
])
def test_how_a_process_ended_is_said_in_words(rc, timed_out, error, says, fix):
    from neuron_env.target_python.outcome import ended

    what, todo = ended(rc, timed_out, 120.0, 5.0, error)
    assert says in what and fix in todo, (what, todo)


def test_a_rank_killed_early_is_not_a_time_out():
    """#40.11: SIGKILL 5 s into a 120 s limit: said as a kill, exit 1, never TIMED OUT."""
    killed = dist.RankState(1, "model", False, None, None, -9, False, 5.0)
    stopped = dist.RankState(0, "wrap ddp", True, None, None, -9, True, 10.1)
    r = dist.verdict(dist.DistRun(REF, (stopped, killed), 10.0, died=1), D, 120, "gloo")
    assert not r.timed_out and r.status == "fail"
    assert r.summary.startswith("rank 1 died during model: it was killed by signal 9 (SIGKILL) "
                                "5.0s into the 120s limit; rank 0 was stopped"), r.summary
    assert "dmesg" in (r.fix or "")


def test_a_killed_reference_says_so_without_protocol_markers():
    ref = dist.RankState(-1, "reference step 1", False, None, None, -9, False, 3.0)
    r = dist.verdict(dist.DistRun(None, (ref,), 3.0, where="reference",
                                  launcher_tail="some output"), D, 120, "gloo")
    assert not r.timed_out and "@@" not in r.summary
    assert ("the one-process reference (the whole batch, no process group) died during "
            "reference step 1: it was killed by signal 9 (SIGKILL)") in r.summary, r.summary


def test_torchrun_agents_failure_report_gives_each_rank_its_exit():
    text = ("Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-05_08:00:00\n"
            "  host      : vm\n  rank      : 1 (local_rank: 0)\n  exitcode  : -9 (pid: 42)\n"
            "  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 42\n"
            "[1]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : -15 (pid: 41)\n")
    assert dist.worker_exits(text) == {1: -9, 0: -15}


def test_under_torchrun_the_rank_that_died_first_is_blamed_not_its_victims():
    victim = dist.RankState(0, "wrap ddp", True, None,
                            "Traceback\nRuntimeError: Connection closed by peer [127.0.0.1]:1", 1)
    killed = dist.RankState(1, "model", False, None, None, -9)
    assert dist.first_death((victim, killed)) == 1
    crashed = dist.RankState(1, "step 1", True, None, None, 17)
    assert dist.first_death((victim, crashed)) == 1
    own = dist.RankState(1, "step 1", True, None, "Traceback\nValueError: bad shape", 1)
    assert dist.first_death((victim, own)) == 1
    stopped = dist.RankState(0, "step 1", True, None, None, -15)
    assert dist.first_death((stopped, own)) == 1


def test_a_finished_run_that_failed_is_not_said_to_have_stopped():
    from neuron_env.cost.prices import Price

    price = Price(2.0, None, None, "flag")
    from types import SimpleNamespace

    from neuron_env.report.model import Result
    from neuron_env.trial.dist_command import no_price_reason

    wrong = Result("trial.distributed", "trial", "fail", "differs", details={"throughput": {}})
    why = no_price_reason(wrong, SimpleNamespace(info={}))
    res, _ = cost_result(None, price, False, "cpu", None, why)
    assert res.status == "skip" and "did not finish" not in res.summary
    assert "the ranks finished" in res.summary
    res, _ = cost_result(None, price, False, "cpu", None)
    assert "did not finish" in res.summary


def test_a_dead_runs_directory_is_removed_and_an_unknown_one_named(tmp_path):
    from neuron_env.trial import rundir

    dead = tmp_path / f"{rundir.PREFIX}dead"
    dead.mkdir(mode=0o700)
    (dead / rundir.OWNER).write_text("999999999 12\n")  # above any pid_max: a dead run
    unknown = tmp_path / f"{rundir.PREFIX}unknown"
    unknown.mkdir(mode=0o700)
    swept: list[str] = []
    found = rundir.stale(swept.append, str(tmp_path))
    by = {f["path"]: f for f in found}
    assert by[str(dead)]["removed"] and not dead.exists() and swept == [str(dead)]
    assert not by[str(unknown)]["removed"] and unknown.exists()
    text = rundir.summary(found)
    assert "removed 1 run directory left by a dead trial (pid 999999999)" in text
    assert str(unknown) in text


def test_a_failed_reference_is_not_blamed_on_a_rank():
    ref = dist.RankState(-1, "reference step 1", False, None, "x\nValueError: shapes", 3)
    r = dist.verdict(dist.DistRun(None, (ref,), 3.0, where="reference"), D, 60, "gloo")
    assert "the one-process reference" in r.summary and "ValueError: shapes" in r.summary


def test_options_and_launch_lines():
    o = TrialOptions(model="builtin:mlp")
    with pytest.raises(UsageError, match="divisor"):
        dist.validate(o, dist.DistOptions(world_size=3, nnodes=2))
    with pytest.raises(UsageError, match="float32"):
        dist.validate(TrialOptions(model="builtin:mlp", dtype="bfloat16"), D)
    with pytest.raises(UsageError, match="ddp or fsdp2"):
        dist.validate(o, dist.DistOptions(world_size=2, strategy="zero3"))
    p = dist.payload(o, dist.DistOptions(world_size=4, strategy="fsdp2"), "/r", "rank")
    assert (p["backend"], p["rtol"], p["atol"], p["steps"]) == ("neuron", 1e-4, 1e-5, 1)
    s = dist.launch_script("torchrun", "/py", o, dist.DistOptions(world_size=8, nnodes=2))
    assert "--nproc-per-node=4" in s and "FI_PROVIDER=efa" in s
    with pytest.raises(UsageError):
        dist.launch_script("mpirun", "/py", o, D)
