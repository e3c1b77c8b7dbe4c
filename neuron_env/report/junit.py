"""JUnit XML: one testcase per check, so Image Builder/Packer/CI dashboards show each one.

JUnit has no "warning": a warning is a passed testcase whose name ends in " [WARN]", with a
`status` property and its text in system-out; under --strict every warning is a failure."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from neuron_env.guards.text import xml_safe
from neuron_env.report.model import Report, Result

HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _suite(root: ET.Element, name: str, **attrs: str) -> ET.Element:
    return ET.SubElement(root, "testsuite", {"name": name, **attrs})


def _body(r: Result) -> str:
    return "\n".join(x for x in (
        r.summary,
        f"observed: {json.dumps(r.observed, default=str)}" if r.observed is not None else "",
        f"expected: {json.dumps(r.expected, default=str)}" if r.expected is not None else "",
        f"fix: {r.fix}" if r.fix else "", f"fix_command: {r.fix_command}" if r.fix_command
        else "", f"docs: {r.docs}" if r.docs else "",
        f"waived: {r.waiver['reason']} (until {r.waiver.get('until') or 'no date'})"
        if r.waiver else "") if x)


def _case(ts: ET.Element, r: Result, strict: bool, prefix: str = "") -> bool:
    """Add one testcase; True when it counts as a failure. prefix: a trial's cases are named
    `trial[<model>].<check>` (several models in one CI job never collide). `time` only where
    the check's duration was measured (never a made-up 0)."""
    warn = r.status == "warn"
    name = f"{prefix}.{r.id.partition('.')[2]}" if prefix else r.id
    attrs = {"classname": f"neuron-env.{r.category}", "name": name + (" [WARN]" if warn else "")}
    if r.duration_s is not None:
        attrs["time"] = f"{r.duration_s:.6f}"
    tc = ET.SubElement(ts, "testcase", attrs)
    props = ET.SubElement(tc, "properties")
    ET.SubElement(props, "property", name="status", value=r.status)
    if r.waiver:
        ET.SubElement(props, "property", name="waived", value=r.waiver["reason"])
    body = _body(r)
    if r.status == "fail" or (warn and strict):
        ET.SubElement(tc, "failure", message=("WARNING (--strict): " if warn else "") + r.summary,
                      type=r.status).text = body
        return True
    if r.status == "error":
        ET.SubElement(tc, "error", message=r.summary, type="error").text = body
    elif r.status == "skip":
        ET.SubElement(tc, "skipped", message=r.summary).text = body
    else:
        ET.SubElement(tc, "system-out").text = ("WARNING: " if warn else "") + body
    return False


def render(report: Report) -> str:
    s = report.summary
    strict = bool(report.extra.get("strict"))
    root = ET.Element("testsuites", name="neuron-env")
    elapsed = report.extra.get("elapsed_s") or sum(r.duration_s or 0 for r in report.results)
    ts = _suite(root, report.schema.split("/")[0], tests=str(len(report.results)),
                errors=str(s["error"]), skipped=str(s["skip"]), time=f"{elapsed:.3f}")
    props = ET.SubElement(ts, "properties")
    trial = report.schema.startswith("neuron-env.trial")
    model = (report.target or {}).get("model") if trial else None
    emulated = bool(report.extra.get("emulated") or (report.target or {}).get("emulated"))
    for k, v in (("matrix", (report.matrix or {}).get("release")),
                 ("tool_version", report.tool.get("version")), ("exit_code", report.exit_code),
                 ("strict", strict), ("warnings", s["warn"]), ("model", model),
                 ("rehearsal", "EMULATED device: every figure is a rehearsal on the CPU, not "
                               "a Trainium measurement" if emulated else None)):
        if v is not None:  # an unknown property is left out, never "None"
            ET.SubElement(props, "property", name=k, value=str(v))
    prefix = f"trial[{model}]" if trial and model else ""
    failures = sum(_case(ts, r, strict, prefix) for r in report.results)
    ts.set("failures", str(failures))
    root.set("tests", str(len(report.results)))
    root.set("failures", str(failures))
    root.set("errors", str(s["error"]))
    root.set("time", f"{elapsed:.3f}")
    ET.indent(root)
    return HEADER + xml_safe(ET.tostring(root, "unicode")) + "\n"


def render_error(doc: dict[str, Any]) -> str:
    """The run failed before any check (exit 2/3/4): one errored testcase that says why, so the
    dashboard shows the reason instead of an absent report."""
    err = doc.get("error") or {}
    root = ET.Element("testsuites", name="neuron-env", tests="1", failures="0", errors="1",
                      time="0")
    ts = _suite(root, str(doc.get("schema", "neuron-env")).split("/")[0], tests="1",
                failures="0", errors="1", skipped="0", time="0")
    props = ET.SubElement(ts, "properties")
    ET.SubElement(props, "property", name="exit_code", value=str(doc.get("exit_code")))
    tc = ET.SubElement(ts, "testcase", classname="neuron-env.run", name="neuron-env.run",
                       time="0")
    text = str(err.get("message", "")) + (f"\nhint: {err['hint']}" if err.get("hint") else "")
    ET.SubElement(tc, "error", message=str(err.get("message", "")),
                  type=str(err.get("code", "error"))).text = text
    ET.indent(root)
    return HEADER + ET.tostring(root, "unicode") + "\n"
