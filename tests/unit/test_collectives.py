"""Pure parts of `neuron-env collectives`: sizes, options, bandwidth definitions, naming the
faulty rank, and the multi-node launch lines."""

from __future__ import annotations

import pytest

from neuron_env.collectives import results
from neuron_env.collectives.options import (
    CollectivesOptions,
    human_sizes,
    parse_ops,
    parse_sizes,
    validate,
)
from neuron_env.collectives.runner import CollectivesRun, RankOutcome
from neuron_env.errors import UsageError


def test_sizes_range_steps_by_four_like_nccl_tests_and_lists_are_exact():
    assert parse_sizes("8B..128") == (8, 32, 128)
    assert parse_sizes("1K..4M")[:3] == (1024, 4096, 16384)
    assert parse_sizes("1K,3MB, 10") == (1024, 3 << 20, 10)
    assert parse_sizes(human_sizes((8, 1000, 3 << 20))) == (8, 1000, 3 << 20)
    for bad in ("abc", "16MB..8B", "0", "9G", "1T"):
        with pytest.raises(UsageError):
            parse_sizes(bad)


def test_ops_and_numbers_are_validated():
    assert parse_ops(["all_reduce", "all_reduce", "send_recv"]) == ("all_reduce", "send_recv")
    with pytest.raises(UsageError, match="unknown allreduce"):
        parse_ops(["allreduce"])
    for bad in (dict(device="tpu"), dict(dtype="float64"), dict(world_size=0),
                dict(iterations=0), dict(timeout=float("nan")), dict(timeout=float("inf")),
                dict(timeout=-1)):
        with pytest.raises(UsageError):
            validate(CollectivesOptions(**bad))


def rows(op, n_wrong=0, busbw=1.0, **kw):
    return [dict(op=op, dtype="float32", size_bytes=s, count=s // 4, time_us=10.0,
                 algbw_gbps=busbw, busbw_gbps=busbw * s / 1024, wrong=n_wrong, **kw)
            for s in (1024, 2048)]


def test_op_results_pass_fail_and_name_the_source_rank():
    ok, = results.op_results(rows("all_reduce"), ("all_reduce",))
    assert ok.status == "pass" and "peak busbw 2 GB/s at 2 KB" in ok.summary
    bad, = results.op_results(rows("all_gather", 3, wrong_ranks=[0, 1], suspect_ranks=[1]),
                              ("all_gather",))
    assert bad.status == "fail" and "6 wrong elements" in bad.summary
    assert "data from rank 1 arrived wrong" in bad.summary
    skipped = [dict(op="send_recv", dtype="float32", size_bytes=4, count=1,
                    skipped="needs 2 ranks")]
    s, = results.op_results(skipped, ("send_recv",))
    assert s.status == "skip" and "needs 2 ranks" in s.summary


def outcome(rank, code, step="all_reduce:8", entered=True, error=None, killed=False):
    return RankOutcome(rank, code, killed, step, entered, error, "")


def test_a_hang_names_the_rank_that_never_entered_the_collective():
    run = CollectivesRun(None, (outcome(0, None, killed=True),
                                outcome(1, None, entered=False, killed=True)), 5.0, True, None)
    r = results.launch_result(run, 2, "gloo", "cpu", 5)
    assert r.status == "fail" and r.timed_out
    assert "rank 1 never entered all_reduce at 8 B; rank 0 waited inside it" in r.summary


def test_a_crash_names_the_rank_that_died_first_not_its_victims():
    victim = outcome(0, 3, error="RuntimeError: Connection closed by peer")
    crashed = outcome(1, -11, entered=False)
    # seen exiting in the same poll: the one without a Python error (a signal) crashed first
    run = CollectivesRun(None, (victim, crashed), 1.0, False, 0, exit_order=((0, 1),))
    r = results.launch_result(run, 2, "gloo", "cpu", 60)
    assert r.summary.startswith("rank 1 died (signal 11)") and "then rank 0 failed" in r.summary
    # seen exiting first: that one, whatever its error
    run = CollectivesRun(None, (victim, crashed), 1.0, False, 0, exit_order=((0,), (1,)))
    r = results.launch_result(run, 2, "gloo", "cpu", 60)
    assert r.summary.startswith("rank 0 died (exit 3)") and "Connection closed" in r.summary
