"""Scan results -> the neuron-env.scan/1 body (pure), the exit code, and the unified diff."""

from __future__ import annotations

import difflib
from typing import Any

from neuron_env.errors import EXIT_FAILED, EXIT_OK
from neuron_env.report.envelope import envelope
from neuron_env.scan.ruleset import SEVERITIES, Ruleset

SCHEMA = "neuron-env.scan/1"


def findings(results: list[dict[str, Any]], rs: Ruleset) -> list[dict[str, Any]]:
    out = []
    for r in results:
        for rid, line, col, end_line, end_col, fixable, detail, fp in r["hits"]:
            rule = rs.rules[rid]
            out.append({"rule": rid, "severity": rule.severity, "path": r["path"], "line": line,
                        "column": col, "end_line": end_line, "end_column": end_col,
                        "message": rule.message + (f": {detail}" if detail else ""),
                        "replacement": rule.replacement, "docs": rule.docs,
                        "fixable": fixable, "fingerprint": fp})
    return out


def counts(found: list[dict[str, Any]]) -> dict[str, Any]:
    by_rule: dict[str, int] = {}
    by_sev = dict.fromkeys(SEVERITIES, 0)
    for f in found:
        by_rule[f["rule"]] = by_rule.get(f["rule"], 0) + 1
        by_sev[f["severity"]] += 1
    return {"total": len(found), "fixable": sum(f["fixable"] for f in found),
            "by_rule": dict(sorted(by_rule.items())), "by_severity": by_sev}


def exit_code(found: list[dict[str, Any]], fail_on: str, exit_zero: bool) -> int:
    if exit_zero or fail_on == "never":
        return EXIT_OK
    floor = SEVERITIES.index(fail_on)
    bad = any(SEVERITIES.index(f["severity"]) >= floor for f in found)
    return EXIT_FAILED if bad else EXIT_OK


def body(rs: Ruleset, enabled: set[str], paths: list[str], results: list[dict[str, Any]],
         skipped: list[dict[str, Any]], settings: dict[str, Any], **extra: Any) -> dict[str, Any]:
    found = findings(results, rs)
    scanned = [r for r in results if not r["skipped"]]
    skipped = skipped + [{"path": r["path"], "reason": r["skipped"]} for r in results
                         if r["skipped"]]
    code = exit_code(found, settings["fail_on"], settings["exit_zero"])
    return envelope(
        SCHEMA, code, matrix={"release": rs.release, "source": rs.path}, paths=paths,
        settings=settings, findings=found, counts=counts(found),
        files={"scanned": [r["path"] for r in scanned], "skipped": skipped,
               "lines": sum(r["lines"] for r in scanned)},
        rules=[rs.rules[i].serialize() for i in sorted(enabled)], **extra)


def unified_diff(changed: list[dict[str, Any]]) -> str:
    """One patch for `patch -p1` run where the scan ran."""
    chunks = []
    for r in changed:
        old = r["old_text"].splitlines(keepends=True)
        new = r["new_text"].splitlines(keepends=True)
        for line in difflib.unified_diff(old, new, f"a/{r['path']}", f"b/{r['path']}"):
            chunks.append(line if line.endswith(("\n", "\r")) else
                          line + "\n\\ No newline at end of file\n")
    return "".join(chunks)
