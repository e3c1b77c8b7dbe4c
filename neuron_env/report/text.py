"""The human report: grouped like `flutter doctor`, colour on a TTY (or FORCE_COLOR), never with
NO_COLOR set non-empty."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from neuron_env.report.model import CATEGORIES, RANK, Report, Result
from neuron_env.util.text import escape_controls, field

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


def _mark(status: str, colour: bool) -> str:
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
    lines = []
    m = report.matrix or {}
    groups: dict[str, list[Result]] = {}
    for r in report.results:
        groups.setdefault(r.category, []).append(r)
    for cat, results in groups.items():
        worst = max(results, key=lambda r: RANK[r.status]).status
        lines.append(f"[{_mark(worst, colour)}] {CATEGORIES.get(cat, cat)}")
        for r in results:
            # host strings (a version, a name) on their one line: a newline in them never
            # forges another check's line (util.text.field)
            lines.append(f"    {_mark(r.status, colour)} {field(r.summary)}  ({field(r.id)})")
            if r.status in ("fail", "warn", "error") or verbose:
                if verbose and r.observed is not None:
                    lines.append(f"        observed: {_fmt(r.observed)}")
                if verbose and r.expected is not None:
                    lines.append(f"        expected: {_fmt(r.expected)}")
                if r.fix and r.status != "pass":
                    lines.append(f"        fix: {field(r.fix)}")
                if r.docs and r.status != "pass":
                    lines.append(f"        docs: {field(r.docs)}")
                if verbose and r.details:
                    for k, v in r.details.items():
                        if k != "traceback":
                            lines.append(f"        {field(k)}: {_fmt(v)}")
                if r.status == "error" and r.details and r.details.get("traceback"):
                    lines += ["        " + field(ln)
                              for ln in r.details["traceback"].splitlines()]
    s = report.summary
    parts = [f"{s[k]} {k}" for k in ("pass", "warn", "fail", "skip", "error") if s[k]]
    verdict = {0: "OK", 1: "FAILED", 3: "INTERNAL ERROR", 4: "TIMED OUT"}.get(
        report.exit_code, "ERROR")
    against = f"against Neuron {m.get('release')}; " if m else ""
    emulated = " — EMULATED device, not Trainium" if report.extra.get("emulated") else ""
    lines.append("")
    if m.get("origin"):  # doctor: which matrix, from where (bundled, user, file)
        lines.append(matrix_line(m))
    lines.append(f"{verdict}: {', '.join(parts) or 'no checks'} ({against}exit "
                 f"{report.exit_code}){emulated}")
    return escape_controls("\n".join(lines) + "\n", keep_sgr=colour)


def matrix_line(m: dict[str, Any]) -> str:
    """`matrix: Neuron 2.34 (user, 2026-11-20, sha256 0123456789ab…) /path/neuron-2.34.toml`"""
    facts = [m["origin"], m.get("date"),
             f"sha256 {m['sha256'][:12]}…" if m.get("sha256") else None]
    return (f"matrix: Neuron {m.get('release')} ({', '.join(f for f in facts if f)}) "
            f"{m.get('path') or m.get('source') or ''}").rstrip()
