"""doctor --format prometheus: the collectives bandwidth family, present only when a
collectives result measured a bandwidth."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from neuron_env.collectives.results import op_results
from neuron_env.report.model import Report, Result
from neuron_env.report.render import render

NAME = "neuron_env_collectives_busbw_bytes_per_second"


def _report(*results: Result) -> Report:
    return Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"},
                  {"release": "2.33"}, {}, results, 0)


def _rows(op: str, peak: float) -> list[dict]:
    return [{"op": op, "size_bytes": n, "time_us": 1.0, "algbw_gbps": peak * f,
             "busbw_gbps": peak * f, "wrong": 0} for n, f in ((8, 0.01), (1 << 20, 1.0))]


def test_busbw_per_collective_in_bytes_per_second() -> None:
    results = op_results(_rows("all_reduce", 12.5) + _rows("all_gather", 3.25),
                         ("all_reduce", "all_gather"))
    fams = {f.name: f for f in text_string_to_metric_families(render(_report(*results),
                                                                     "prometheus"))}
    got = {(s.labels["check"], s.labels["op"]): s.value for s in fams[NAME].samples}
    assert got == {("collectives.all_reduce", "all_reduce"): 12.5e9,
                   ("collectives.all_gather", "all_gather"): 3.25e9}
    assert fams[NAME].type == "gauge" and "bus bandwidth" in fams[NAME].documentation


def test_no_family_without_a_measurement() -> None:
    skipped = Result("collectives.all_reduce", "collectives", "skip", "the device smoke test "
                     "did not pass")
    other = Result("os.release", "os", "pass", "ok", observed={"peak_busbw_gbps": 1.0})
    text = render(_report(skipped, other), "prometheus")
    assert NAME not in text
