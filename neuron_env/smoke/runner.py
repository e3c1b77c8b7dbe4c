"""Collect the smoke script run in the target (started by smoke/start.py through target/) and
turn its document into Results."""

from __future__ import annotations

from neuron_env.report.model import RANK, STATUSES, Result
from neuron_env.smoke.start import SmokeOptions, start
from neuron_env.target_python.outcome import TargetRun, failed
from neuron_env.target_python.protocol import collect

SmokeRun = TargetRun  # one run-result type (neuron_env/target_python/outcome.py)


def _label(summary: str, emulated: bool) -> str:
    return f"[EMULATED] {summary}" if emulated else summary


def run(python: str, opts: SmokeOptions, live=None) -> SmokeRun:
    return finish(python, opts, start(python, opts), live)


def finish(python: str, opts: SmokeOptions, running, live=None) -> SmokeRun:
    """Collect a started smoke run (see smoke/start.py) and turn it into Results. live: a
    smoke.live.StepLines that tells on stderr which step runs, as it runs."""
    if live is not None:
        live.follow(running)
    ins = collect(running.result())
    if ins.res.timed_out or ins.doc is None:
        return failed("smoke", python, ins.res, ins.where, opts.timeout,
                      "the device may be hung")
    return _from_doc(ins.doc, ins.res.elapsed)


def _from_doc(doc: dict, elapsed: float) -> SmokeRun:
    emulated = bool(doc.get("emulated"))
    results = []
    for s in doc.get("steps", []):
        data = {k: v for k, v in s.items() if k not in ("name", "status", "summary")}
        status = s.get("status", "error")
        results.append(Result(
            f"smoke.{s.get('name')}", "smoke", status if status in STATUSES else "error",
            _label(str(s.get("summary", "")), emulated), details=data or None,
            fix=_fix(s), observed=_observed(s), expected=_expected(s)))
    info = {k: doc.get(k) for k in ("torch", "backend", "warnings", "options")}
    return SmokeRun(tuple(results), emulated=emulated, info=info, elapsed=elapsed)


def _observed(s: dict):
    if s.get("name") == "matmul" and "max_abs_error" in s:
        return {"max_abs_error": s["max_abs_error"], "max_rel_error": s.get("max_rel_error")}
    return None


def _expected(s: dict):
    if s.get("name") == "matmul" and "rtol" in s:
        return {"rtol": s["rtol"], "atol": s["atol"]}
    return None


def _fix(s: dict) -> str | None:
    if s.get("status") not in ("fail", "error"):
        return None
    name = s.get("name")
    if name == "import":
        return "install torch into the target: neuron-env install --python TARGET"
    if name == "device":
        return "likely causes: " + "; ".join(s.get("causes") or []) + " (run neuron-env doctor)"
    if name == "matmul" and "out of memory" in s.get("summary", ""):
        return "use a smaller --size"
    if name == "matmul":
        return "the device computes wrong results: check driver/runtime versions (doctor)"
    if name == "fallback":
        return "ops that fall back run on the CPU: rewrite them or allow fallback"
    return None


def worst(results) -> str:
    return max((r.status for r in results), key=RANK.__getitem__, default="skip")
