"""The trial's human views: text (the grouped results + timing and shape tables) and Markdown
(for a pull request or a bug report). Both read only the Report."""

from __future__ import annotations

from neuron_env.guards.text import field
from neuron_env.report import noise, text
from neuron_env.report.model import Report
from neuron_env.trial.markup import ICONS, md

VERDICT = {0: "OK", 1: "FAILED", 2: "BAD INPUT", 3: "INTERNAL ERROR", 4: "TIMED OUT"}


def _ms(v) -> str:
    return "-" if v is None else f"{v * 1000:.2f}"


def _s(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _timings(report: Report) -> dict:
    timing = report.target.get("timing") or {}
    return {str(k): v for k, v in timing.items() if isinstance(v, dict)} \
        if isinstance(timing, dict) else {}


def timing_rows(report: Report) -> list[list[str]]:
    rows = []
    for mode, t in _timings(report).items():
        sp = noise.spread(t)
        box = f"{_ms(sp['low_s'])}-{_ms(sp['high_s'])}" if sp else "-"
        rows.append([field(mode), _s(t.get("first_call_s")), _ms(t.get("median_s")), box,
                     f"{_ms(t.get('min_s'))}-{_ms(t.get('max_s'))}",
                     str(t.get("iterations", "-")), "NOISY" if sp and sp["noisy"] else
                     "ok" if sp else "-"])
    return rows


def timing_notes(report: Report) -> list[str]:
    """What the spread says: each noisy run's warnings and what to do, and whether compiled
    vs eager is distinguishable at all (report/noise.py)."""
    notes, worst = [], None
    for mode, t in _timings(report).items():
        sp = noise.spread(t)
        if sp and sp["noisy"]:
            notes.append(f"{field(mode)} is noisy: {'; '.join(sp['warnings'])}")
            worst = sp
    tm = _timings(report)
    words = noise.speed_words(tm.get("eager"), tm.get("compiled"))
    if words:
        notes.append(words)
    if worst is not None:
        notes.append(noise.advice(worst))
    return notes


TIMING_HEAD = ["run", "first s", "median ms", "q1-q3 ms", "min-max ms", "n", "spread"]
SHAPES_HEAD = ["shape", "compilations", "compile s", "steady ms", "error"]


def shapes_title(report: Report) -> str:
    res = next((r for r in report.results if r.id == "trial.shapes"), None)
    eager = ((res.details or {}).get("mode") == "eager") if res else False
    return "Shapes (EAGER: torch.compile failed)" if eager else "Shapes (compiled)"


def shape_rows(report: Report) -> list[list[str]]:
    res = next((r for r in report.results if r.id == "trial.shapes"), None)
    rows = (res.details or {}).get("rows") or [] if res else []
    return [["x".join(map(str, r["shape"])), str(r.get("compilations", "-")),
             _s(r.get("compile_s")), _ms(r.get("steady_s")), field(r.get("error", ""))]
            for r in rows]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [head, *rows]]


def title(report: Report) -> str:
    t = report.target
    emu = " [EMULATED]" if t.get("emulated") else ""
    torch = (t.get("backend") or {}).get("torch")
    return field(f"trial {t.get('model')} on {t.get('device')}{emu}"
                 f"{f' (torch {torch})' if torch else ''}, {t.get('dtype')}")


def render_text(report: Report, verbose: bool = False, colour: bool = False) -> str:
    body = title(report) + "\n" + text.render(report, verbose=verbose, colour=colour)
    head, _, verdict = body.rstrip("\n").rpartition("\n\n")
    extra = []
    if timing_rows(report):
        extra += ["", "Timing (synchronised fwd+bwd; one run: its spread below)",
                  *_table(TIMING_HEAD, timing_rows(report)),
                  *(f"  {n}" for n in timing_notes(report))]
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
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A table whose cells are all outside text (escaped with md)."""
    return [_md_row([md(c) for c in head]), "|" + "---|" * len(head),
            *(_md_row([md(c) for c in r]) for r in rows)]


def render_markdown(report: Report, verbose: bool = False, colour: bool = False) -> str:
    s = report.summary
    counts = ", ".join(f"{s[k]} {k}" for k in ("pass", "warn", "fail", "skip", "error") if s[k])
    lines = [f"## neuron-env {md(title(report))}", "",
             f"**{VERDICT.get(report.exit_code, 'ERROR')}**: {counts} (exit {report.exit_code})",
             ""]
    lines += [_md_row(["", "result", "summary"]), "|---|---|---|"]
    lines += [_md_row([ICONS[r.status], f"`{r.id}`", md(r.summary)]) for r in report.results]
    if timing_rows(report):
        lines += ["", "### Timing (synchronised forward+backward; one run: its spread)", "",
                  *_md_table(TIMING_HEAD, timing_rows(report)), ""]
        lines += [f"- {md(n)}" for n in timing_notes(report)]
    if shape_rows(report):
        lines += ["", f"### {md(shapes_title(report))}", "",
                  *_md_table(SHAPES_HEAD, shape_rows(report))]
    lines += cost_markdown(report)
    fixes = [r for r in report.results if r.fix and r.status in ("fail", "warn", "error")]
    if fixes:
        lines += ["", "### What to do", ""] + [f"- `{r.id}`: {md(r.fix)}" for r in fixes]
    if report.target.get("emulated"):
        lines += ["", "_EMULATED device: every op ran on the CPU; this proves the code runs on a "
                      "`neuron` device, not how Trainium performs._"]
    return "\n".join(lines) + "\n"


def cost_markdown(report: Report) -> list[str]:
    """The cost table, titled as a rehearsal when the run was emulated."""
    from neuron_env.trial.dist_command import COST_HEAD, REHEARSAL, cost_rows

    rows = cost_rows(report)
    if not rows:
        return []
    tag = f" ({REHEARSAL})" if report.target.get("emulated") else ""
    return ["", f"### Cost{md(tag)}", "", *_md_table(COST_HEAD, rows)]
