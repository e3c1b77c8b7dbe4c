"""The text, JUnit and HTML views of a neuron-env.fleet/1 body (JSON is the body itself)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

from neuron_env.fleet.aggregate import OK, VERDICTS
from neuron_env.guards.text import field as f1

SHOWN = 50  # instances listed in text; JSON has them all


def text(body: dict[str, Any]) -> str:
    """Every value a node reported (its id, a check's id and summary, a version) goes through
    guards.text.field: one line each, whatever it holds."""
    s = body["summary"]
    counts = ", ".join(f"{s[v]} {v}" for v in VERDICTS if s[v])
    src = body.get("source") or {}
    lines = [f"fleet: {s['instances']} instances ({counts or 'none'})"
             + (f"  [SSM command {src['command_id']}]" if src.get("command_id") else "")]
    bad: list[dict[str, Any]] = []
    n_bad = 0  # the first SHOWN kept, the rest counted (100,000 nodes may fail)
    for r in body["instances"]:
        if r["verdict"] not in OK:
            n_bad += 1
            if len(bad) < SHOWN:
                bad.append(r)
    if bad:
        lines.append("\nnot passing:")
        lines += [f"  {f1(r['id']):<22} {r['verdict']:<11} {f1(r['reason'])}" for r in bad]
        if n_bad > SHOWN:
            lines.append(f"  … {n_bad - SHOWN} more (see --format json)")
    if body["failing_checks"]:
        lines.append("\nfailing checks:")
        lines += [f"  {f1(f['id']):<22} {f['count']:>5} instance(s)  {f1(f['summary'])}"
                  for f in body["failing_checks"][:SHOWN]]
    if body["truncated"]:
        lines.append(f"\n{len(body['truncated'])} report(s) truncated at 24,000 characters by "
                     "SSM: rerun with --s3-bucket B to read whole reports")
    for d in body["drift"]["drifting"]:
        vers = ", ".join(f"{f1(v)} ×{n}"
                         for v, n in body["drift"]["versions"][d["component"]].items())
        lines.append(f"\ndrift: {f1(d['component'])}: {vers}; off {f1(d['majority'])}: "
                     + ", ".join(map(f1, d["instances"])) + ("…" if d["off_majority"] > len(
                         d["instances"]) else ""))
    lines.append("\nverdict: " + ("FAIL" if body["exit_code"] else "PASS"))
    return "\n".join(lines) + "\n"


def junit(body: dict[str, Any]) -> Iterator[str]:
    """One testcase per instance: fail -> failure; error/timeout/unreachable -> error. In
    pieces (a testcase at a time, as ElementTree writes it, indented): the counts come from
    the summary, so no tree of 100,000 testcases is built."""
    s = body["summary"]
    failures = s["fail"]
    errors = s["instances"] - s["pass"] - s["warn"] - failures
    suite = ET.Element("testsuite", name="neuron-env.fleet", tests=str(s["instances"]),
                       failures=str(failures), errors=str(errors))
    head = '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="neuron-env">\n  '
    if not s["instances"]:
        yield head + ET.tostring(suite, "unicode") + "\n</testsuites>\n"
        return
    yield head + ET.tostring(suite, "unicode").removesuffix(" />") + ">\n"
    piece: list[str] = []
    for r in body["instances"]:
        piece.append("    " + ET.tostring(_testcase(r), "unicode") + "\n")
        if len(piece) >= 200:
            yield "".join(piece)
            piece = []
    yield "".join(piece) + "  </testsuite>\n</testsuites>\n"


def _testcase(r: dict[str, Any]) -> ET.Element:
    tc = ET.Element("testcase", classname="neuron-env.fleet", name=r["id"])
    detail = "\n".join([r["reason"], *(f"{p['id']}: {p['status']}: {p['summary']}"
                                       for p in r["failing"]), f"source: {r['source']}"])
    if r["verdict"] == "fail":
        ET.SubElement(tc, "failure", message=r["reason"], type="fail").text = detail
    elif r["verdict"] not in OK:
        ET.SubElement(tc, "error", message=r["reason"], type=r["verdict"]).text = detail
    else:
        ET.SubElement(tc, "system-out").text = detail
    ET.indent(tc, level=2)
    return tc


PIECE = 1 << 18  # characters per piece of the streamed JSON (about 1,000 nodes' lines)


def json_text(body: dict[str, Any]) -> str:
    """The whole JSON document as one string (json_pieces joined)."""
    return "".join(json_pieces(body))


def json_pieces(body: dict[str, Any]) -> Iterator[str]:
    """The JSON document in pieces of about PIECE characters, each ending at a line end (the
    renderer masks and writes one piece at a time: a 100,000-node document is never one
    string): indented, every instance on one line of its own written by json's C encoder (the
    indenting encoder is pure Python: 20 s for 10,000 nodes). Joined, the same values as
    json.dumps(body, indent=2)."""
    from neuron_env.util.jsonout import dumps

    head = dumps({k: v for k, v in body.items() if k not in ("instances", "exit_code")},
                 indent=2)
    # the envelope's key order: ..., instances, exit_code (last)
    piece = [head.removesuffix("\n}") + ',\n  "instances": [']
    last, size = None, 0  # the node line before this one: its "," is known once a next comes
    for r in body["instances"]:
        piece.append("\n" if last is None else last + ",\n")
        if size >= PIECE:  # a piece ends at a line end
            yield "".join(piece)
            piece, size = [], 0
        last = "    " + dumps(r)
        size += len(last)
    piece.append("]" if last is None else last + "\n  ]")
    piece.append(f',\n  "exit_code": {dumps(body["exit_code"])}\n}}\n')
    yield "".join(piece)


def html(body: dict[str, Any]) -> str:
    """The HTML page (report/html_fleet.py, imported only when asked for)."""
    from neuron_env.report import html_fleet

    return html_fleet.render(body)
