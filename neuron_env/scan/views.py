"""The views of a neuron-env.scan/1 body: text grouped by file, SARIF 2.1.0 (GitHub code
scanning), the diff, the rule list. Pure: body in, text out."""

from __future__ import annotations

import json
from itertools import groupby
from typing import Any
from urllib.parse import quote

from neuron_env.guards.text import field as f1
from neuron_env.util.wrap import wrap_line

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def text(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    fixes = doc.get("fixes")
    if fixes:
        lines.append(f"fixed {fixes['applied']} finding(s) in {len(fixes['files'])} file(s):")
        lines += [f"  {f1(p)}" for p in fixes["files"]]
        lines += [f"  not fixed: {f1(p['path'])}: {f1(p['reason'])}" for p in fixes["refused"]]
        lines.append("")
    # every value from outside (a file name, a message quoting source) on its one line
    for raw, group in groupby(doc["findings"], key=lambda f: f["path"]):
        path = f1(raw)
        lines.append(path)
        for f in group:
            lines.append(f"  {path}:{f['line']}:{f['column']}: {f['severity']:<7} "
                         f"{f1(f['rule'])}  {f1(f['message'])}")
            lines.append(f"      -> {f1(f['replacement'])}" + ("  [fixable]" if f["fixable"]
                                                               else ""))
        lines.append("")
    lines += [f"skipped {f1(s['path'])}: {f1(s['reason'])}" for s in doc["files"]["skipped"]]
    lines.append(summary(doc))
    return "\n".join(lines) + "\n"


def summary(doc: dict[str, Any]) -> str:
    c, files = doc["counts"], doc["files"]
    sev = c["by_severity"]
    with_findings = len({f["path"] for f in doc["findings"]})
    s = (f"{c['total']} finding(s) ({sev['error']} error, {sev['warning']} warning, "
         f"{sev['info']} info) in {with_findings} of {len(files['scanned'])} file(s), "
         f"{files['lines']} lines; {len(files['skipped'])} skipped; rules of Neuron "
         f"{f1(doc['matrix']['release'])}.")
    if c["fixable"] and not doc.get("fixes"):
        s += f" {c['fixable']} fixable: --diff to preview, --fix to apply."
    return s


def diff(doc: dict[str, Any]) -> str:
    return str(doc.get("diff", ""))


def rules_text(doc: dict[str, Any]) -> str:
    m = doc["matrix"]
    lines = [*wrap_line(f"scan rules of Neuron {f1(m['release'])} ({f1(m['source'])})",
                        RULES_WIDTH), ""]
    for r in doc["rules"]:  # a rules TOML (--matrix FILE) may come from anywhere
        head = (f"{f1(r['id']):<22} {r['severity']:<7} {f1(r['summary'])}"
                + ("  [fixable]" if r["fixable"] else ""))
        lines += wrap_line(head, RULES_WIDTH) if len(head) > RULES_WIDTH else [head]
        lines += wrap_line(f"  -> {f1(r['replacement'])}", RULES_WIDTH)
        lines.append(f"     {f1(r['docs'])}")  # a URL is never cut
    return "\n".join(lines) + "\n"


RULES_WIDTH = 80  # --list-rules fits a standard terminal, piped or not


def sarif(doc: dict[str, Any]) -> str:
    rules = doc["rules"]
    index = {r["id"]: i for i, r in enumerate(rules)}
    seen: dict[tuple[Any, ...], int] = {}
    results = []
    for f in doc["findings"]:
        key = (f["rule"], f["path"], f["fingerprint"])
        seen[key] = seen.get(key, 0) + 1
        res = {"ruleId": f["rule"], "ruleIndex": index[f["rule"]], "level": LEVEL[f["severity"]],
               "message": {"text": f"{f['message']}. Native replacement: {f['replacement']}"},
               "locations": [_location(f["path"], f)]}
        if f["fingerprint"]:
            res["partialFingerprints"] = {"neuronEnvLineHash/v1":
                                          f"{f['fingerprint']}:{seen[key]}"}
        results.append(res)
    notes = [{"level": "note", "message": {"text": f"skipped: {s['reason']}"},
              "locations": [_location(s["path"], None)]} for s in doc["files"]["skipped"]]
    run = {"tool": {"driver": {"name": "neuron-env", "version": doc["tool"]["version"],
                               "rules": [_rule(r) for r in rules]}},
           "results": results, "columnKind": "unicodeCodePoints",
           "invocations": [{"executionSuccessful": True,
                            "toolExecutionNotifications": notes}]}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]},
                      indent=2) + "\n"


def _rule(r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "name": r["id"].replace(".", "_"),
            "shortDescription": {"text": r["summary"]},
            "fullDescription": {"text": r["message"]},
            "help": {"text": f"Native replacement: {r['replacement']}\nDocs: {r['docs']}"},
            "helpUri": r["docs"], "defaultConfiguration": {"level": LEVEL[r["severity"]]},
            "properties": {"tags": ["neuron", r["id"].split(".")[0]]}}


def uri_of(path: str) -> str:
    """A relative or file:// URI for a path whose bytes may not be UTF-8 (a name decoded with
    surrogateescape): the original bytes, percent-encoded (RFC 3986)."""
    raw = quote(path.encode("utf-8", "surrogateescape"))
    return raw if not path.startswith("/") else "file://" + raw


def _location(path: str, f: dict[str, Any] | None) -> dict[str, Any]:
    uri = uri_of(path)
    loc: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if not path.startswith("/"):
        loc["artifactLocation"]["uriBaseId"] = "%SRCROOT%"
    if f is not None:
        loc["region"] = {"startLine": f["line"], "startColumn": f["column"],
                         "endLine": f["end_line"], "endColumn": f["end_column"]}
    return {"physicalLocation": loc}
