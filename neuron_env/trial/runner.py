"""Start the trial script in the target interpreter (own process group, hard timeout, step
markers: the smoke runner's machinery) and turn its JSON document into Results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from neuron_env.errors import UsageError
from neuron_env.inside import script
from neuron_env.report.model import RANK, Result
from neuron_env.smoke.runner import collect, inside_env, no_result
from neuron_env.trial import advice
from neuron_env.trial.options import TrialOptions
from neuron_env.util import proc


@dataclass(frozen=True)
class TrialRun:
    results: tuple[Result, ...]
    emulated: bool = False
    info: dict = field(default_factory=dict)
    elapsed: float = 0.0


def start(python: str, opts: TrialOptions) -> proc.Running:
    """Start the target now: it imports torch while neuron-env imports the rest of itself."""
    return proc.spawn([python, str(script("trial.py")), json.dumps(opts.payload())],
                      timeout=opts.timeout, env=inside_env())


def finish(running: proc.Running, python: str, opts: TrialOptions, live=None) -> TrialRun:
    """live: a smoke.live.StepLines that says each step on stderr as it starts."""
    if live is not None:
        live.follow(running)
    ins = collect(running.result())
    res, where, doc = ins.res, ins.where.replace("-", "_"), ins.doc
    if res.timed_out:
        r = Result(f"trial.{where}", "trial", "fail",
                   f"timed out after {opts.timeout:g}s during the {where} step: the device or "
                   "the model hung (the whole process group was killed)", timed_out=True,
                   fix="check neuron-top / dmesg for a stuck device; raise --timeout if a first "
                       "compile is just slow", details={"step": where})
        return TrialRun((r,), info={"stderr_tail": res.tail(1500)}, elapsed=res.elapsed)
    if doc is None:
        r = Result(f"trial.{where}", "trial", "fail", no_result(python, ins, "trial"))
        return TrialRun((r,), info={"stderr_tail": res.tail(1500)}, elapsed=res.elapsed)
    if doc.get("usage_error"):
        u = doc["usage_error"]
        raise UsageError(u["message"], hint=u.get("hint"))
    emulated = bool(doc.get("emulated"))
    results = tuple(to_result(s, emulated, opts) for s in doc.get("results", []))
    info = {k: doc.get(k) for k in ("backend", "timing", "warnings", "import_s")}
    return TrialRun(results, emulated=emulated, info=info, elapsed=res.elapsed)


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
                  details=data or None)
