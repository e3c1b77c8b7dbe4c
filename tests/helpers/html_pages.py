"""HTML report pages for tests: a Report rebuilt from a command's JSON document (the page is
built from that document alone), and headless Chromium to render a page (tests/integration/
test_html_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from neuron_env.report.model import Report, Result

FIELDS = ("id", "category", "status", "summary", "observed", "expected", "fix", "docs",
          "details", "timed_out", "fix_command", "fix_safe", "duration_s", "waiver")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "html"


def report_of(doc: dict[str, Any]) -> Report:
    """The Report a command returned, from its JSON document."""
    known = ("schema", "tool", "matrix", "target", "results", "summary", "exit_code")
    return Report(schema=doc["schema"], tool=doc["tool"], matrix=doc.get("matrix"),
                  target=doc.get("target") or {},
                  results=tuple(Result(**{k: r[k] for k in FIELDS if k in r})
                                for r in doc["results"]),
                  exit_code=doc["exit_code"],
                  extra={k: v for k, v in doc.items() if k not in known})


def trial_doc(name: str = "trial-mismatch.json") -> dict[str, Any]:
    return json.loads((FIXTURE / name).read_text())
