"""Pure: from a steady-state throughput and an hourly price to what a team compares."""

from __future__ import annotations

from typing import Any


def per_thousand(usd_per_hour: float, samples_per_s: float) -> float | None:
    """$ per 1,000 samples: the hour's price over the samples one hour processes, x 1,000."""
    if samples_per_s <= 0 or usd_per_hour < 0:
        return None
    return usd_per_hour / (samples_per_s * 3600.0) * 1000.0


def per_step(usd_per_hour: float, step_s: float) -> float | None:
    """$ per training step (the whole instance's price for one step's wall time)."""
    if step_s <= 0 or usd_per_hour < 0:
        return None
    return usd_per_hour * step_s / 3600.0


def figures(usd_per_hour: float, samples_per_s: float, step_s: float) -> dict[str, Any]:
    return {"usd_per_hour": usd_per_hour, "samples_per_s": samples_per_s, "step_s": step_s,
            "usd_per_1000_samples": per_thousand(usd_per_hour, samples_per_s),
            "usd_per_step": per_step(usd_per_hour, step_s)}


def compare(this: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """Side by side: throughput ratio (this / baseline: > 1 is faster) and cost ratio
    (this / baseline: < 1 is cheaper per sample)."""
    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b not in (None, 0) else None
    return {"throughput_ratio": ratio(this.get("samples_per_s"), baseline.get("samples_per_s")),
            "cost_ratio": ratio(this.get("usd_per_1000_samples"),
                                baseline.get("usd_per_1000_samples"))}


def verdict_line(this: dict[str, Any], baseline: dict[str, Any], ratios: dict[str, Any]) -> str:
    """The one line a team needs: who is cheaper per 1,000 samples, by how much."""
    c, t = ratios.get("cost_ratio"), ratios.get("throughput_ratio")
    here, there = this.get("label", "this run"), baseline.get("label", "the baseline")
    if c is None:
        speed = f"{t:.2f}x the baseline's throughput" if t is not None else "no throughput"
        return f"{here}: {speed}; no cost ratio (a price is missing on one side)"
    word = "cheaper" if c < 1 else "dearer"
    return (f"{here} is {abs(1 - c) * 100:.0f}% {word} per 1,000 samples than {there} "
            f"(cost ratio {c:.2f}, throughput ratio {t:.2f})" if t is not None else
            f"{here}: cost ratio {c:.2f} vs {there}")
