"""Plots for the HTML reports as inline SVG, drawn by matplotlib (the optional `html` extra,
imported here only, when a report is rendered as HTML): `available()` says whether plots can
be drawn; every function returns the <svg> element as text.

Text reaches the SVG as <text> elements (svg.fonttype none) that matplotlib escapes itself;
labels are plain text (text.parse_math off: a `$` in a node's name is not TeX)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

EXTRA_HINT = "pip install 'neuron-env[html]'"
COLOURS = {"pass": "#2e7d32", "warn": "#f9a825", "fail": "#c62828", "error": "#6a1b9a",
           "skip": "#9e9e9e", "other": "#546e7a"}
_RC = {"svg.fonttype": "none", "text.parse_math": False, "font.size": 9,
       "axes.spines.top": False, "axes.spines.right": False}


def available() -> bool:
    """Whether matplotlib can be imported (imported here: only HTML rendering calls this)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("svg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _svg(fig: Any, salt: str) -> str:
    """The figure as one <svg> element: no XML declaration, DOCTYPE or RDF metadata (they name
    w3.org and purl.org URIs; nothing is fetched, but the page names no address it need not)."""
    plt = _pyplot()
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)


def _log_x(ax: Any) -> None:
    """A log x axis labelled in plain numbers (its default labels are TeX, off here)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def bars(labels: Sequence[str], values: Sequence[float], *, title: str, xlabel: str,
         highlight: int | None = None, salt: str = "bars") -> str:
    """Horizontal bars, one per label, top to bottom in the given order; `highlight` (an index)
    drawn in the fail colour. Values spanning more than 50x go on a log axis (a small
    highlighted bar stays visible beside a large one)."""
    plt = _pyplot()
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.28 * max(len(labels), 1)))
        colours = [COLOURS["fail"] if i == highlight else COLOURS["other"]
                   for i in range(len(labels))]
        positive = [v for v in values if v > 0]
        wide = bool(positive) and max(positive) / min(positive) > 50
        ax.barh(range(len(labels)), values, color=colours)
        ax.set_yticks(range(len(labels)), [str(x) for x in labels])
        if highlight is not None and 0 <= highlight < len(labels):
            ax.get_yticklabels()[highlight].set_color(COLOURS["fail"])
        ax.invert_yaxis()
        if wide:
            _log_ticks(ax, [*positive, min(positive) / 2])
            xlabel += " (log scale)"
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        return _svg(fig, salt)


def ranges(rows: Sequence[tuple[str, dict[str, Any]]], *, title: str,
           salt: str = "ranges") -> str:
    """One row per timing (eager, compiled): the min..max whisker, a box of the quartiles (or,
    for a run that recorded no samples, median ± stdev clipped to min..max: never past the
    whisker), the median tick and the first call as a marker; a log axis with labelled ticks
    on any range (report/noise.py computes the box)."""
    plt = _pyplot()
    with plt.rc_context(_RC):
        fig, _ax = ranges_figure(rows, title=title)
        return _svg(fig, salt)


def ranges_figure(rows: Sequence[tuple[str, dict[str, Any]]], *, title: str) -> Any:
    """(figure, axes) of `ranges`, for the SVG and for tests of its geometry."""
    from neuron_env.report.noise import spread

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.55 * len(rows)))
    seen: list[float] = []
    for i, (_name, t) in enumerate(rows):
        lo, hi, sp = t.get("min_s"), t.get("max_s"), spread(t)
        if lo is not None and hi is not None:
            ax.hlines(i, lo, hi, color=COLOURS["other"], linewidth=1.5)
            ax.vlines([lo, hi], i - 0.12, i + 0.12, color=COLOURS["other"], linewidth=1.5)
            seen += [lo, hi]
        if sp is not None:
            ax.barh(i, sp["high_s"] - sp["low_s"], left=sp["low_s"], height=0.4,
                    color="#90a4ae", label=sp["box"] if i == 0 else None)
            ax.vlines(sp["median_s"], i - 0.25, i + 0.25, color="black", linewidth=2)
            seen += [sp["low_s"], sp["high_s"], sp["median_s"]]
        if t.get("first_call_s") is not None:
            ax.plot([t["first_call_s"]], [i], marker="D", color=COLOURS["fail"],
                    linestyle="none", label="first call" if i == 0 else None)
            seen.append(t["first_call_s"])
    ax.set_yticks(range(len(rows)), [str(n) for n, _ in rows])
    ax.invert_yaxis()
    _log_ticks(ax, [v for v in seen if isinstance(v, int | float) and v > 0])
    ax.set_xlabel("seconds per call (log scale)")
    ax.set_title(title, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1), frameon=False)
    return fig, ax


def _log_ticks(ax: Any, values: list[float]) -> None:
    """A log x axis over the values (padded), with labelled ticks at 1, 2, 5 (or every digit
    within a decade, or only the powers of ten over many decades): never one or no label."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    if values:
        lo, hi = min(values) / 1.4, max(values) * 1.4
        ax.set_xlim(lo, hi)
        decades = math.log10(hi / lo)
        subs = (1.0,) if decades > 4 else (1.0, 2.0, 5.0) if decades > 1.2 else \
            tuple(float(x) for x in range(1, 10))
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=30))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def stacked(labels: Sequence[str], series: dict[str, Sequence[int]], *, title: str,
            xlabel: str, salt: str = "stacked") -> str:
    """Horizontal stacked bars: per label, one segment per series (a status: its colour);
    the values are counts (of nodes): the axis ticks are whole numbers."""
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.8 + 0.24 * max(len(labels), 1)))
        left = [0] * len(labels)
        for name, values in series.items():
            ax.barh(range(len(labels)), values, left=left, label=name,
                    color=COLOURS.get(name, COLOURS["other"]))
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_yticks(range(len(labels)), [str(x) for x in labels])
        ax.invert_yaxis()
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1, 1), frameon=False)
        return _svg(fig, salt)
