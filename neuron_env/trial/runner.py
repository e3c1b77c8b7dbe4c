"""Start the trial script in the target interpreter (through target/: own process group, hard
timeout, the step/marker protocol) and turn its JSON document into Results."""

from __future__ import annotations

import re

from neuron_env.errors import UsageError
from neuron_env.guards import proc
from neuron_env.report.model import RANK, Result
from neuron_env.target_python import launch
from neuron_env.target_python.outcome import TargetRun, failed
from neuron_env.target_python.protocol import collect
from neuron_env.trial import advice
from neuron_env.trial.options import TrialOptions

TrialRun = TargetRun  # one run-result type (neuron_env/target_python/outcome.py)


def start(python: str, opts: TrialOptions, baseline_tmp: str | None = None) -> proc.Running:
    """Start the target now: it imports torch while neuron-env imports the rest of itself.
    baseline_tmp: the temporary file (guards/atomic.PendingOutput) --save-baseline writes into."""
    payload = dict(opts.payload(), save_baseline_tmp=baseline_tmp)
    return launch.spawn_script(python, "trial.py", payload, timeout=opts.timeout,
                               keep_cwd=True)  # MODEL names are relative to the cwd


def finish(running: proc.Running, python: str, opts: TrialOptions, live=None) -> TrialRun:
    """live: a smoke.live.StepLines that says each step on stderr as it starts."""
    if live is not None:
        live.follow(running)
    ins = collect(running.result())
    res, where, doc = ins.res, ins.where.replace("-", "_"), ins.doc
    if res.timed_out or doc is None:
        return failed("trial", python, res, where, opts.timeout, "the device or the model hung",
                      details={"step": where} if res.timed_out else None)
    if doc.get("usage_error"):
        u = doc["usage_error"]
        raise UsageError(u["message"], hint=u.get("hint"))
    emulated = bool(doc.get("emulated"))
    results = tuple(to_result(s, emulated, opts) for s in doc.get("results", []))
    info = {k: doc.get(k) for k in ("backend", "timing", "warnings", "import_s", "batch_size")}
    results = tuple(with_noise(r, info.get("timing")) for r in results)
    return TrialRun(results, emulated=emulated, info=info, elapsed=res.elapsed)


_SPEED = re.compile(r" \(\d+\.\d+x (?:faster|slower) than eager\)")


def with_noise(r: Result, timing: dict | None) -> Result:
    """trial.compile: a speed-up whose spread overlaps eager's is "not distinguishable", not a
    winner (report/noise.py); the judgement goes in details.speed."""
    if r.id != "trial.compile" or not isinstance(timing, dict):
        return r
    from neuron_env.report import noise
    from neuron_env.util.record import replace

    words = noise.speed_words(timing.get("eager"), timing.get("compiled"))
    if words is None or not _SPEED.search(r.summary):
        return r
    return replace(r, summary=_SPEED.sub(f" ({words})", r.summary, count=1),
                   details=dict(r.details or {}, speed=words))


def to_result(s: dict, emulated: bool, opts: TrialOptions) -> Result:
    name, status = str(s.get("name")), s.get("status", "error")
    data = {k: v for k, v in s.items() if k not in ("name", "status", "summary")}
    summary = str(s.get("summary", ""))
    if name == "shapes" and data.get("rows"):
        status, summary, data["advice"] = advice.shapes(data, status)
    if emulated:
        summary = f"[EMULATED] {summary}"
    return Result(f"trial.{name}", "trial", status if status in RANK else "error",
                  summary, observed=advice.observed(name, data),
                  expected=advice.expected(name, data), fix=advice.fix(name, status, data, opts),
                  details=data or None, duration_s=measured_s(data))


def measured_s(data: dict) -> float | None:
    """The seconds a step's own record says it took (the CPU reference's `seconds`, a timed
    run's first call plus its iterations, a shape sweep's compiles and steps), else None."""
    def num(v: object) -> float | None:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    if num(data.get("seconds")) is not None:
        return num(data.get("seconds"))
    t = data.get("timing")
    if isinstance(t, dict) and num(t.get("first_call_s")) is not None:
        samples = [x for x in t.get("samples_s") or [] if num(x) is not None]
        steady = sum(samples) if samples else (num(t.get("median_s")) or 0.0) * (
            num(t.get("iterations")) or 0)
        return round((num(t.get("first_call_s")) or 0.0) + steady, 6)
    rows = data.get("rows")
    if isinstance(rows, list) and rows:
        total = sum((num(r.get("compile_s")) or 0.0) + (num(r.get("steady_s")) or 0.0)
                    for r in rows if isinstance(r, dict))
        return round(total, 6) if total else None
    return None
