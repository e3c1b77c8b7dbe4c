"""`doctor --format prometheus`: node_exporter's textfile collector format. Each check is a
state set (one gauge per status, 1 for the status it has), the verdict likewise, versions are
labels of an `_info` gauge; names follow Prometheus conventions (neuron_env_ prefix, base units,
`_seconds`, `_info`)."""

from __future__ import annotations

import time

from neuron_env.report.model import STATUSES, Report
from neuron_env.report.verdict import COMPONENTS, verdict, versions

VERDICTS = ("pass", "warn", "fail", "error", "timeout")


def _esc(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kw: object) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kw.items()) + "}"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _family(name: str, help: str, samples: list[tuple[str, float]]) -> list[str]:
    return [f"# HELP {name} {help}", f"# TYPE {name} gauge",
            *(f"{name}{labels} {_num(value)}" for labels, value in samples)]


def render(report: Report, now: float | None = None) -> str:
    doc = report.serialize()
    v, ver = verdict(doc), versions(doc)
    target = doc.get("target") or {}
    info = {"version": report.tool.get("version", ""),
            "matrix": (report.matrix or {}).get("release") or "",
            "instance_type": (target.get("instance") or {}).get("type") or "",
            **{c.replace("-", "_"): ver[c] or "" for c in COMPONENTS}}
    lines = [
        *_family("neuron_env_info", "neuron-env and the Neuron stack versions it saw (always 1).",
                 [(_labels(**info), 1)]),
        *_family("neuron_env_doctor_verdict", "The doctor verdict as a state set (1 = current).",
                 [(_labels(verdict=x), int(x == v)) for x in VERDICTS]),
        *_family("neuron_env_doctor_exit_code", "The doctor exit code (0 ok, 1 failed, 2 "
                 "config, 3 internal, 4 timeout).", [("", report.exit_code)]),
        *_family("neuron_env_doctor_checks", "Checks per status in this run.",
                 [(_labels(status=s), n) for s, n in report.summary.items()]),
        *_family("neuron_env_check_status", "Each check's status as a state set (1 = current).",
                 [(_labels(check=r.id, category=r.category, status=s), int(s == r.status))
                  for r in report.results for s in STATUSES]),
        *_family("neuron_env_doctor_duration_seconds", "How long the doctor run took.",
                 [("", float(report.extra.get("elapsed_s") or 0.0))]),
        *_family("neuron_env_doctor_last_run_timestamp_seconds", "When this doctor run ended "
                 "(Unix time).", [("", round(time.time() if now is None else now, 3))]),
    ]
    return "\n".join(lines) + "\n"
