"""The one-process trial's cost (pure): its steady-state throughput (the batch over the median
step of the fastest mode that passed: compiled when `--compile` ran and matched, else eager)
turned into $ per 1,000 samples with the price the distributed trial uses."""

from __future__ import annotations

from typing import Any

from neuron_env.cost.prices import Price
from neuron_env.report.model import Result


def throughput(results: tuple[Result, ...], timing: dict[str, Any] | None,
               batch: int | None) -> dict[str, Any] | None:
    """{"samples_per_s", "step_s", "mode", "batch"} of the steady state, or None when no mode
    that ran on the device passed (a wrong result has no price) or nothing was timed."""
    status = {r.id: r.status for r in results}
    timing = timing or {}
    runs = []
    for mode, rid in (("compiled", "trial.compile"), ("eager", "trial.eager")):
        t = timing.get(mode) or {}
        if status.get(rid) in ("pass", "warn") and t.get("median_s"):
            runs.append((float(t["median_s"]), mode))
    if not runs or not batch:
        return None
    step_s, mode = min(runs)
    return {"samples_per_s": batch / step_s, "step_s": step_s, "mode": mode, "batch": batch}


def cost(results: tuple[Result, ...], timing: dict[str, Any] | None, batch: int | None,
         price: Price, emulated: bool, device: str) -> Result:
    """trial.cost of one process: what `--price-per-hour`/`--aws`/`--instance-type` ask for."""
    from neuron_env.trial.dist_command import cost_result

    thr = throughput(results, timing, batch)
    if thr is None:
        return Result("trial.cost", "trial", "skip", "no steady-state throughput to price: no "
                      "device run (eager or compiled) matched the CPU, so its speed has no "
                      "price", details={"price": price.as_dict()})
    label = f"{device} x1, {thr['mode']}, batch {thr['batch']} " \
            f"({price.instance_type or 'this host'})"
    res, _this = cost_result(thr, price, emulated, label, None)
    from neuron_env.util.record import replace

    details = dict(res.details or {}, throughput=thr, processes=1)
    spread = cost_spread((timing or {}).get(thr["mode"]) or {}, price, thr["batch"])
    if spread is None or res.status == "skip":
        return replace(res, details=details)
    details["spread"] = spread
    return replace(res, details=details, summary=f"{res.summary}; {spread['line']}")


def cost_spread(t: dict[str, Any], price: Price, batch: int) -> dict[str, Any] | None:
    """The $ per 1,000 samples at the fast and slow ends of the timed iterations' spread
    (report/noise.py), and the run's noise warnings: one run's figure is a range, not a point."""
    from neuron_env.report import noise

    sp = noise.spread(t)
    rng = noise.cost_range(price.usd_per_hour, batch, t) if price.usd_per_hour else None
    if sp is None or rng is None:
        return None
    return noise.cost_record(sp, rng, f"{sp['iterations'] or '?'} timed iterations "
                                      f"({sp['box']})")
