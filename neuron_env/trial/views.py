"""The trial's human views: text (the grouped results + timing and shape tables) and Markdown
(for a pull request or a bug report). Both read only the Report."""

from __future__ import annotations

from neuron_env.report import text
from neuron_env.report.model import Report

ICONS = {"pass": "✅", "warn": "⚠️", "fail": "❌", "skip": "➖", "error": "💥"}
VERDICT = {0: "OK", 1: "FAILED", 2: "BAD INPUT", 3: "INTERNAL ERROR", 4: "TIMED OUT"}


def _ms(v) -> str:
    return "-" if v is None else f"{v * 1000:.2f}"


def _s(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def timing_rows(report: Report) -> list[list[str]]:
    timing = report.target.get("timing") or {}
    return [[mode, _s(t.get("first_call_s")), _ms(t.get("median_s")), _ms(t.get("min_s")),
             _ms(t.get("max_s")), _ms(t.get("stdev_s")), str(t.get("iterations", "-"))]
            for mode, t in timing.items()]


TIMING_HEAD = ["run", "first call s", "median ms", "min ms", "max ms", "stdev ms", "iterations"]
SHAPES_HEAD = ["shape", "compilations", "compile s", "steady ms", "error"]


def shapes_title(report: Report) -> str:
    res = next((r for r in report.results if r.id == "trial.shapes"), None)
    eager = ((res.details or {}).get("mode") == "eager") if res else False
    return "Shapes (EAGER: torch.compile failed)" if eager else "Shapes (compiled)"


def shape_rows(report: Report) -> list[list[str]]:
    res = next((r for r in report.results if r.id == "trial.shapes"), None)
    rows = (res.details or {}).get("rows") or [] if res else []
    return [["x".join(map(str, r["shape"])), str(r.get("compilations", "-")),
             _s(r.get("compile_s")), _ms(r.get("steady_s")), r.get("error", "")] for r in rows]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [head, *rows]]


def title(report: Report) -> str:
    t = report.target
    emu = " [EMULATED]" if t.get("emulated") else ""
    torch = (t.get("backend") or {}).get("torch")
    return (f"trial {t.get('model')} on {t.get('device')}{emu}"
            f"{f' (torch {torch})' if torch else ''}, {t.get('dtype')}")


def render_text(report: Report, verbose: bool = False, colour: bool = False) -> str:
    body = title(report) + "\n" + text.render(report, verbose=verbose, colour=colour)
    head, _, verdict = body.rstrip("\n").rpartition("\n\n")
    extra = []
    if timing_rows(report):
        extra += ["", "Timing (synchronised fwd+bwd)", *_table(TIMING_HEAD, timing_rows(report))]
    if shape_rows(report):
        extra += ["", shapes_title(report), *_table(SHAPES_HEAD, shape_rows(report))]
    if any(r.id == "trial.cost" for r in report.results):
        from neuron_env.trial.dist_command import COST_HEAD, REHEARSAL, cost_rows

        rows = cost_rows(report)
        if rows:
            extra += ["", "Cost" + (f" ({REHEARSAL})" if report.target.get("emulated") else ""),
                      *_table(COST_HEAD, rows)]
    return "\n".join([head, *extra, "", verdict]) + "\n"


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [_md_row(head), "|" + "---|" * len(head), *(_md_row(r) for r in rows)]


def render_markdown(report: Report, verbose: bool = False, colour: bool = False) -> str:
    s = report.summary
    counts = ", ".join(f"{s[k]} {k}" for k in ("pass", "warn", "fail", "skip", "error") if s[k])
    lines = [f"## neuron-env {title(report)}", "",
             f"**{VERDICT.get(report.exit_code, 'ERROR')}**: {counts} (exit {report.exit_code})",
             ""]
    lines += _md_table(["", "result", "summary"], [[ICONS[r.status], f"`{r.id}`", r.summary]
                                                    for r in report.results])
    if timing_rows(report):
        lines += ["", "### Timing (synchronised forward+backward)", "",
                  *_md_table(TIMING_HEAD, timing_rows(report))]
    if shape_rows(report):
        lines += ["", f"### {shapes_title(report)}", "",
                  *_md_table(SHAPES_HEAD, shape_rows(report))]
    fixes = [r for r in report.results if r.fix and r.status in ("fail", "warn", "error")]
    if fixes:
        lines += ["", "### What to do", ""] + [f"- `{r.id}`: {r.fix}" for r in fixes]
    if report.target.get("emulated"):
        lines += ["", "_EMULATED device: every op ran on the CPU; this proves the code runs on a "
                      "`neuron` device, not how Trainium performs._"]
    return "\n".join(lines) + "\n"
