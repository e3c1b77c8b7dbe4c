"""`doctor --format prometheus`: node_exporter's textfile collector format. Each check is a
state set (one gauge per status, 1 for the status it has), the verdict likewise, versions are
labels of an `_info` gauge; names follow Prometheus conventions (neuron_env_ prefix, base units,
`_seconds`, `_info`)."""

from __future__ import annotations

import time

from neuron_env.guards.text import clean
from neuron_env.report.model import STATUSES, Report
from neuron_env.report.verdict import COMPONENTS, verdict, versions

VERDICTS = ("pass", "warn", "fail", "error", "timeout")


def _esc(value: object) -> str:
    """A label value per the exposition format: control characters (newline too) made visible
    by the one sanitiser first, then backslash and quote escaped (no newline is left)."""
    return clean(value, one_line=True).replace("\\", "\\\\").replace('"', '\\"')


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
    busbw = _busbw(report)
    if busbw:
        lines += _family("neuron_env_collectives_busbw_bytes_per_second", "Peak bus bandwidth "
                         "of each collective the run measured (nccl-tests busbw).", busbw)
    return "\n".join(lines) + "\n"


def _busbw(report: Report) -> list[tuple[str, float]]:
    """(labels, bytes/s) per collectives result that measured a bandwidth (doctor --smoke
    --collectives: collectives.all_reduce; `collectives`: one per op)."""
    out = []
    for r in report.results:
        obs = r.observed if isinstance(r.observed, dict) else {}
        gbps = obs.get("peak_busbw_gbps")
        if r.category == "collectives" and isinstance(gbps, (int, float)):
            op = r.id.split(".", 1)[-1]
            out.append((_labels(check=r.id, op=op), round(float(gbps) * 1e9, 3)))
    return out
