"""JUnit XML: one testcase per check, so Image Builder/Packer/CI dashboards show each one."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from neuron_env.report.model import Report
from neuron_env.util.text import xml_safe


def render(report: Report, suite: str = "neuron-env.doctor") -> str:
    s = report.summary
    root = ET.Element("testsuites", name="neuron-env")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(report.results)),
                       errors=str(s["error"]), skipped=str(s["skip"]))
    # under --strict a warning is what failed the run: show it as a failure
    strict_warn = report.exit_code == 1 and s["fail"] == 0
    failures = 0
    props = ET.SubElement(ts, "properties")
    for k, v in (("matrix", (report.matrix or {}).get("release")),
                 ("tool_version", report.tool.get("version")), ("exit_code", report.exit_code)):
        ET.SubElement(props, "property", name=k, value=str(v))
    for r in report.results:
        tc = ET.SubElement(ts, "testcase", classname=f"neuron-env.{r.category}", name=r.id)
        body = "\n".join(x for x in (
            r.summary,
            f"observed: {json.dumps(r.observed, default=str)}" if r.observed is not None else "",
            f"expected: {json.dumps(r.expected, default=str)}" if r.expected is not None else "",
            f"fix: {r.fix}" if r.fix else "", f"docs: {r.docs}" if r.docs else "") if x)
        if r.status == "fail" or (r.status == "warn" and strict_warn):
            failures += 1
            ET.SubElement(tc, "failure", message=r.summary, type=r.status).text = body
        elif r.status == "error":
            ET.SubElement(tc, "error", message=r.summary, type="error").text = body
        elif r.status == "skip":
            ET.SubElement(tc, "skipped", message=r.summary)
        else:
            ET.SubElement(tc, "system-out").text = body
    ts.set("failures", str(failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml_safe(ET.tostring(root, "unicode")) \
        + "\n"
