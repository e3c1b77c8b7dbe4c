"""The human report: checks grouped by category, each under its worst mark; colour on a TTY
(or FORCE_COLOR), never with NO_COLOR set non-empty. A command's own text view
builds on `compose`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from neuron_env.guards.text import escape_controls, field
from neuron_env.report.model import CATEGORIES, RANK, Report, Result
from neuron_env.util.wrap import CMD

if TYPE_CHECKING:
    from neuron_env.report.steps import Step

MARKS = {"pass": "✓", "warn": "!", "fail": "✗", "skip": "-", "error": "✗"}
COLOURS = {"pass": "32", "warn": "33", "fail": "31", "skip": "90", "error": "35"}


def use_colour(stream: TextIO | None = None) -> bool:
    """no-color.org: a NON-EMPTY NO_COLOR turns colour off; FORCE_COLOR (non-empty, not 0)
    turns it on without a TTY (CI logs that render ANSI); else only on a TTY."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def mark(status: str, colour: bool) -> str:
    m = MARKS[status]
    if not _can_encode(m):
        m = {"pass": "+", "fail": "x", "error": "x"}.get(status, m)
    return f"\033[{COLOURS[status]}m{m}\033[0m" if colour else m


def _can_encode(s: str) -> bool:
    try:
        s.encode(sys.stdout.encoding or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _fmt(v: object) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items() if x is not None) or "-"
    if isinstance(v, list | tuple):
        return ", ".join(_fmt(x) for x in v) or "-"
    return "-" if v is None else field(v)


def render(report: Report, verbose: bool = False, colour: bool = False) -> str:
    """Checks grouped by category; a fix's words under its check, its command once, in the
    numbered "Next steps" at the end (report/steps.py groups them). Commands are marked
    (util.wrap.CMD) so fitting the text to a terminal never breaks one."""
    from neuron_env.report import steps as st

    return compose(report, st.plan(report.results), verbose, colour)


def compose(report: Report, plan: list[Step], verbose: bool, colour: bool, *,
            lead: Sequence[str] = (), after: Sequence[str] = ()) -> str:
    """The grouped checks with `plan`'s steps, the matrix line when the report says where its
    matrix came from, the verdict; a command's own view adds its `lead` lines (before the
    checks) and `after` lines (before the steps)."""
    lines = [*lead, *checks(report, plan, verbose, colour), *after]
    if plan:
        lines += ["", "Next steps:", *next_steps(plan)]
    lines.append("")
    m = report.matrix or {}
    if m.get("origin"):  # which matrix judged, from where (bundled, user, file)
        lines.append(matrix_line(m))
    lines.append(verdict_line(report))
    return escape_controls("\n".join(lines) + "\n", keep_sgr=colour)


def checks(report: Report, plan: list[Step], verbose: bool, colour: bool) -> list[str]:
    """Each category's worst mark, then its checks; a problem's details under it."""
    from neuron_env.report import steps as st

    lines: list[str] = []
    groups: dict[str, list[Result]] = {}
    for r in report.results:
        groups.setdefault(r.category, []).append(r)
    first_of: dict[str, str] = {}  # a fix's words -> the first check printed with them
    for cat, results in groups.items():
        worst = max(results, key=lambda r: RANK[r.status]).status
        lines.append(f"[{mark(worst, colour)}] {CATEGORIES.get(cat, cat)}")
        for r in results:
            # host strings (a version, a name) on their one line: a newline in them never
            # forges another check's line (guards.text.field)
            lines.append(f"    {mark(r.status, colour)} {field(r.summary)}  ({field(r.id)})")
            if r.status in ("fail", "warn", "error") or verbose:
                if verbose and r.observed is not None:
                    lines.append(f"        observed: {_fmt(r.observed)}")
                if verbose and r.expected is not None:
                    lines.append(f"        expected: {_fmt(r.expected)}")
                if r.fix and r.status != "pass":
                    lines += _fix_lines(r, st.step_of(plan, r.id), first_of)
                if r.docs and r.status != "pass":
                    lines.append(f"        docs: {field(r.docs)}")
                if verbose and r.details:
                    for k, v in r.details.items():
                        if k != "traceback":
                            lines.append(f"        {field(k)}: {_fmt(v)}")
                if r.status == "error" and r.details and r.details.get("traceback"):
                    lines += ["        " + field(ln)
                              for ln in r.details["traceback"].splitlines()]
    return lines


def verdict_line(report: Report) -> str:
    """`OK: 20 pass, 1 warn (against Neuron 2.34; exit 0)`, and whether the device was
    emulated."""
    m = report.matrix or {}
    s = report.summary
    parts = [f"{s[k]} {k}" for k in ("pass", "warn", "fail", "skip", "error") if s[k]]
    verdict = {0: "OK", 1: "FAILED", 3: "INTERNAL ERROR", 4: "TIMED OUT"}.get(
        report.exit_code, "ERROR")
    against = f"against Neuron {m.get('release')}; " if m else ""
    emulated = " — EMULATED device, not Trainium" if report.extra.get("emulated") or any(
        (r.details or {}).get("emulated") and r.status != "fail" for r in report.results) else ""
    return (f"{verdict}: {', '.join(parts) or 'no checks'} ({against}exit "
            f"{report.exit_code}){emulated}")


def _fix_lines(r: Result, step: int | None, first_of: dict[str, str]) -> list[str]:
    """`fix:` under a check: the step that runs its command (the step says what it does), or
    its words; words already said under another check point there instead."""
    from neuron_env.report import steps as st

    if step is None:  # prose only, or a command no step runs: said here, once
        words = field(r.fix or "")
        if words in first_of:
            return [f"        fix: as for {first_of[words]}"]
        first_of[words] = r.id
        if r.fix_command and r.fix_command in words:
            return [f"        fix: {field(st.prose(r) or 'run')}:",
                    f"          {CMD}{field(r.fix_command)}"]
        return [f"        fix: {words}"]
    return [f"        fix: next step {step} below"]


def next_steps(plan: list[Step]) -> list[str]:
    """The numbered steps, each with the checks it fixes and its command on its own line."""
    out = []
    for i, s in enumerate(plan, 1):
        fixes = f" (fixes {', '.join(s.ids)})" if s.ids else ""
        out += [f"  {i}. {s.title}{fixes}:", f"     {CMD}{s.command}"]
    return out


def matrix_line(m: dict[str, Any]) -> str:
    """`matrix: Neuron 2.34 (user, 2026-11-20, sha256 0123456789ab…)`, then its path on its own
    indented line (a long path, one word, never makes the line wider than a terminal)."""
    facts = [m["origin"], m.get("date"),
             f"sha256 {m['sha256'][:12]}…" if m.get("sha256") else None]
    where = m.get("path") or m.get("source")
    return (f"matrix: Neuron {m.get('release')} ({', '.join(f for f in facts if f)})"
            + (f"\n  {field(where)}" if where else ""))
