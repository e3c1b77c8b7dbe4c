"""Markdown for a GitHub issue or an AWS support case: a verdict line, a table of every check,
then each problem with its fix (in a shell block, ready to paste) and its docs link."""

from __future__ import annotations

from typing import Any

from neuron_env.report.model import CATEGORIES, Report, Result

ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌", "skip": "➖", "error": "💥"}


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _target(report: Report) -> list[str]:
    t = report.target or {}
    inst, os_, py = t.get("instance") or {}, t.get("os") or {}, t.get("interpreter") or {}
    pk = t.get("packages") or {}
    rows = [("instance", f"{inst.get('type') or 'unknown'} ({inst.get('source') or '-'})"),
            ("os", os_.get("pretty_name") or os_.get("id") or "unknown"),
            ("python", f"{py.get('version') or '?'} at {py.get('path') or '?'}"),
            ("torch", pk.get("torch") or "not installed"),
            ("torch-neuronx", pk.get("torch-neuronx") or "not installed")]
    return ["| | |", "| --- | --- |", *(f"| {k} | `{_cell(v)}` |" for k, v in rows)]


def _problem(r: Result) -> list[str]:
    out = [f"### {ICON[r.status]} `{r.id}`: {r.summary}", ""]
    if r.observed is not None:
        out.append(f"- observed: `{_cell(r.observed)}`")
    if r.expected is not None:
        out.append(f"- expected: `{_cell(r.expected)}`")
    if r.waiver:
        out.append(f"- waived: {r.waiver['reason']} (until {r.waiver.get('until') or '-'})")
    if r.fix and r.fix != r.fix_command:
        out.append(f"- fix: {r.fix}")
    if r.docs:
        out.append(f"- docs: <{r.docs}>")
    if r.fix_command:
        out += ["", "```sh", r.fix_command, "```"]
    return [*out, ""]


def render(report: Report) -> str:
    s = report.summary
    m = report.matrix or {}
    verdict = "OK" if report.exit_code == 0 else f"exit {report.exit_code}"
    counts = ", ".join(f"{s[k]} {k}" for k in ("pass", "warn", "fail", "skip", "error") if s[k])
    lines = [f"## neuron-env {report.schema.split('/')[0].split('.')[-1]}: {verdict}", "",
             f"{counts or 'no checks'}; Neuron {m.get('release', '?')}; neuron-env "
             f"{report.tool.get('version')}"
             + ("; **EMULATED device, not Trainium**" if report.extra.get("emulated") else ""),
             "", *_target(report), "", "| | check | category | summary |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {ICON[r.status]} | `{r.id}` | {CATEGORIES.get(r.category, r.category)} | "
              f"{_cell(r.summary)} |" for r in report.results]
    problems = [r for r in report.results if r.status in ("fail", "warn", "error") or r.waiver]
    if problems:
        lines += ["", "## Problems", ""]
        for r in problems:
            lines += _problem(r)
    return "\n".join(lines).rstrip() + "\n"


def render_error(doc: dict[str, Any]) -> str:
    err = doc.get("error") or {}
    out = [f"## neuron-env: error (exit {doc.get('exit_code')})", "",
           f"**{err.get('code', 'error')}**: {err.get('message', '')}"]
    if err.get("hint"):
        out += ["", f"hint: {err['hint']}"]
    return "\n".join(out) + "\n"
