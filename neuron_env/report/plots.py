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
    drawn in the fail colour."""
    plt = _pyplot()
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.6 + 0.28 * max(len(labels), 1)))
        colours = [COLOURS["fail"] if i == highlight else COLOURS["other"]
                   for i in range(len(labels))]
        ax.barh(range(len(labels)), values, color=colours)
        ax.set_yticks(range(len(labels)), [str(x) for x in labels])
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        return _svg(fig, salt)


def ranges(rows: Sequence[tuple[str, dict[str, Any]]], *, title: str,
           salt: str = "ranges") -> str:
    """One row per timing (eager, compiled): the min..max line, a box of median ± stdev, the
    median tick and the first call as a marker (trial records these, not every sample)."""
    plt = _pyplot()
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.55 * len(rows)))
        for i, (_name, t) in enumerate(rows):
            lo, hi, med = t.get("min_s"), t.get("max_s"), t.get("median_s")
            if lo is not None and hi is not None:
                ax.hlines(i, lo, hi, color=COLOURS["other"], linewidth=1.5)
            if med is not None:
                sd = min(t.get("stdev_s") or 0.0, med * 0.99)  # a box on a log axis stays > 0
                ax.barh(i, 2 * sd, left=med - sd, height=0.4, color="#90a4ae")
                ax.vlines(med, i - 0.25, i + 0.25, color="black", linewidth=2)
            if t.get("first_call_s") is not None:
                ax.plot([t["first_call_s"]], [i], marker="D", color=COLOURS["fail"],
                        linestyle="none", label="first call" if i == 0 else None)
        ax.set_yticks(range(len(rows)), [str(n) for n, _ in rows])
        ax.invert_yaxis()
        _log_x(ax)
        ax.set_xlabel("seconds per call (log scale)")
        ax.set_title(title, loc="left")
        if any(t.get("first_call_s") is not None for _, t in rows):
            ax.legend(loc="upper left", bbox_to_anchor=(1, 1), frameon=False)
        return _svg(fig, salt)


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
