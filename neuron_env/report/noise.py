"""How far a trial's timings can be trusted (pure): the spread of one timed run (median,
quartiles, min..max), the outliers among its samples, and whether a comparison (compiled vs
eager, this run's cost vs a baseline's) is larger than that spread.

The rules follow pytest-benchmark and hyperfine: a sample is an outlier when it lies more than
1.5 interquartile ranges outside the quartiles (Tukey's fences, as pytest-benchmark counts
them); a run is noisy when its stdev is more than NOISY_CV of its median or its slowest sample
more than SLOW_MAX times its median (hyperfine warns on statistical outliers and suggests more
runs on a quieter machine). A ratio whose two interquartile ranges overlap is "not
distinguishable" from noise: no winner is named."""

from __future__ import annotations

import statistics
from typing import Any

NOISY_CV = 0.10  # stdev / median above this: the run is noisy
SLOW_MAX = 2.0  # max / median above this: at least one sample is far off the steady state
FENCE = 1.5  # Tukey's fences: outside q1 - 1.5 IQR .. q3 + 1.5 IQR is an outlier


def quartiles(samples: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3) of the samples (the inclusive method: q1 = median with one sample)."""
    if len(samples) == 1:
        return samples[0], samples[0], samples[0]
    q1, med, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, med, q3


def _num(t: dict[str, Any], key: str) -> float | None:
    v = t.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def spread(t: dict[str, Any]) -> dict[str, Any] | None:
    """The spread of one timing ({median_s, min_s, max_s, stdev_s, iterations, samples_s?,
    q1_s?, q3_s?}): its interquartile range (from the samples, else median ± stdev clipped to
    min..max: an estimate, said so), relative stdev, max/median, outlier count and the
    warnings those give. None when the timing has no median."""
    med = _num(t, "median_s")
    if not med or med <= 0:
        return None
    samples = [float(x) for x in t.get("samples_s") or [] if isinstance(x, int | float)]
    lo, hi, sd = _num(t, "min_s"), _num(t, "max_s"), _num(t, "stdev_s") or 0.0
    if samples:
        q1, med, q3 = quartiles(samples)
        iqr = q3 - q1
        out = sum(1 for x in samples if x < q1 - FENCE * iqr or x > q3 + FENCE * iqr)
        box = (q1, q3, "quartiles")
    else:
        k1, k3 = _num(t, "q1_s"), _num(t, "q3_s")
        out = None
        box = (k1, k3, "quartiles") if k1 is not None and k3 is not None else (
            max(med - sd, lo if lo is not None else med - sd),
            min(med + sd, hi if hi is not None else med + sd), "median ± stdev")
    cv = sd / med
    ratio = hi / med if hi is not None else None
    n = t.get("iterations") if isinstance(t.get("iterations"), int) else len(samples) or None
    warnings = []
    if cv > NOISY_CV:
        warnings.append(f"stdev is {cv:.0%} of the median (over {NOISY_CV:.0%})")
    if ratio is not None and ratio > SLOW_MAX:
        warnings.append(f"the slowest iteration took {ratio:.1f}x the median")
    if out:
        warnings.append(f"{out} of {len(samples)} iterations were outliers (beyond "
                        f"{FENCE} IQR of the quartiles)")
    return {"median_s": med, "low_s": box[0], "high_s": box[1], "box": box[2],
            "min_s": lo, "max_s": hi, "cv": cv, "max_over_median": ratio, "outliers": out,
            "iterations": n, "noisy": bool(warnings), "warnings": warnings}


def advice(s: dict[str, Any]) -> str:
    """The one line that says what to do about a noisy run."""
    n = s.get("iterations") or 10
    return (f"single run on a shared machine: repeat with --iterations {max(30, 3 * n)} on an "
            "idle host before trusting this figure")


def compare(fast: dict[str, Any] | None, slow: dict[str, Any] | None) -> dict[str, Any]:
    """Whether two timings' spreads separate them: {"ratio": slow median / fast median,
    "distinguishable": their interquartile ranges (or median ± stdev) do not overlap}."""
    a, b = spread(fast or {}), spread(slow or {})
    if a is None or b is None:
        return {"ratio": None, "distinguishable": None}
    apart = a["high_s"] < b["low_s"] or b["high_s"] < a["low_s"]
    return {"ratio": b["median_s"] / a["median_s"], "distinguishable": apart}


def speed_words(eager: dict[str, Any] | None, compiled: dict[str, Any] | None) -> str | None:
    """'compiled 2.17x faster than eager' or, where the spreads overlap, 'compiled vs eager:
    not distinguishable (medians 1.79x apart, interquartile ranges overlap)'."""
    c = compare(compiled, eager)
    if c["ratio"] is None:
        return None
    r = c["ratio"]
    words = f"{r:.2f}x faster than eager" if r >= 1 else f"{1 / r:.2f}x slower than eager"
    if c["distinguishable"]:
        return f"compiled {words}"
    return (f"compiled vs eager: not distinguishable (compiled {words} by the medians, but their "
            "spreads overlap)")


def cost_range(usd_per_hour: float, batch: int, t: dict[str, Any]) -> tuple[float, float] | None:
    """$ per 1,000 samples at the fast and slow ends of the spread (low_s, high_s)."""
    s = spread(t)
    if s is None or not batch or s["low_s"] <= 0:
        return None
    per = [usd_per_hour * step / 3600.0 / batch * 1000.0 for step in (s["low_s"], s["high_s"])]
    return per[0], per[1]


def cost_record(sp: dict[str, Any], rng: tuple[float, float], what: str) -> dict[str, Any]:
    """$ per 1,000 samples at both ends of a run's quartile box with its noise warnings: the
    one record trial.cost carries, for one process or many (`what`: the timings it came from)."""
    line = f"spread of the {what}: ${rng[0]:.4g}-${rng[1]:.4g} per 1,000 samples"
    if sp["noisy"]:
        line += f"; NOISY: {'; '.join(sp['warnings'])}; {advice(sp)}"
    return {"usd_per_1000_samples_low": rng[0], "usd_per_1000_samples_high": rng[1],
            "noisy": sp["noisy"], "warnings": sp["warnings"], "line": line}
