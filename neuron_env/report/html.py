"""HTML: one self-contained file per report, for people who would rather look than read.

No network at all: inline CSS, plots as inline SVG (report/plots.py, the optional `html`
extra), no script, and a Content-Security-Policy that lets the browser load nothing (no
script, font, style sheet or image from anywhere). Every value taken from a report goes
through `esc` (html.escape, quotes too). A trial report gets its own page (report/
html_trial.py), a fleet document its own (report/html_fleet.py); any other report a table of
its checks."""

from __future__ import annotations

from typing import Any

from neuron_env.report.html_page import checks_table, esc, page
from neuron_env.report.model import Report


def render(report: Report) -> str:
    if report.schema.startswith("neuron-env.trial/"):
        from neuron_env.report import html_trial

        return html_trial.render(report)
    name = report.schema.split("/")[0].split(".")[-1]
    verdict = "pass" if report.exit_code == 0 else "fail"
    body = (f"<h1>neuron-env {esc(name)}: <span class=\"verdict s-{verdict}\">"
            f"{'OK' if verdict == 'pass' else esc(f'exit {report.exit_code}')}</span></h1>"
            + checks_table(report.results))
    return page(f"neuron-env {name}", body)


def render_error(doc: dict[str, Any]) -> str:
    err = doc.get("error") or {}
    hint = f"<p>hint: {esc(err['hint'])}</p>" if err.get("hint") else ""
    return page("neuron-env: error", (
        f'<h1>neuron-env: <span class="verdict s-error">error (exit '
        f"{esc(doc.get('exit_code'))})</span></h1><p><b>{esc(err.get('code', 'error'))}</b>: "
        f"{esc(err.get('message', ''))}</p>{hint}"))
