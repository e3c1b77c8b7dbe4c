"""Run the smoke script in the target interpreter with a hard timeout; parse it into Results."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from neuron_env.inside import MARKER, script
from neuron_env.report.model import RANK_ORDER, Result
from neuron_env.util import proc

_STEP = re.compile(r"@@STEP (\w+)@@")
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class SmokeOptions:
    device: str = "neuron"
    size: int = 1024
    dtype: str = "float32"
    rtol: float | None = None
    atol: float | None = None
    iterations: int = 10
    backward: bool = False
    compile: bool = False
    no_fallback: bool = False
    timeout: float = DEFAULT_TIMEOUT
    seed: int = 0


@dataclass(frozen=True)
class SmokeRun:
    results: tuple[Result, ...]
    emulated: bool = False
    info: dict = field(default_factory=dict)
    elapsed: float = 0.0


def _label(summary: str, emulated: bool) -> str:
    return f"[EMULATED] {summary}" if emulated else summary


def run(python: str, opts: SmokeOptions) -> SmokeRun:
    payload = {k: v for k, v in opts.__dict__.items() if k != "timeout"}
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONUNBUFFERED="1")
    res = proc.run([python, str(script("smoke.py")), json.dumps(payload)],
                   timeout=opts.timeout, env=env)
    steps_seen = _STEP.findall(res.stderr)
    res = res.replace(stderr=_STEP.sub("", res.stderr).strip())
    where = steps_seen[-1] if steps_seen else "start-up"
    doc = None
    if res.stdout.count(MARKER) >= 2:
        try:
            doc = json.loads(res.stdout.rsplit(MARKER, 2)[-2])
        except ValueError:
            doc = None
    if res.timed_out:
        r = Result(f"smoke.{where}", "smoke", "fail",
                   f"timed out after {opts.timeout:g}s during the {where} step: the device may "
                   "be hung (the whole process group was killed)", timed_out=True,
                   fix="check neuron-top / dmesg for a stuck device; raise --timeout if a "
                       "first compile is just slow")
        return SmokeRun((r,), info={"stderr_tail": res.tail(1500)}, elapsed=res.elapsed)
    if doc is None:
        if res.error:
            why = f"could not start {python}: {res.error}"
        elif res.returncode is not None and res.returncode < 0:
            why = (f"the target crashed (signal {-res.returncode}) during the {where} step: "
                   f"{res.tail(300) or 'no output'}")
        else:
            why = (f"the smoke script gave no result (exit {res.returncode}) during the {where} "
                   f"step: {res.tail(300) or 'no output'}")
        return SmokeRun((Result(f"smoke.{where}", "smoke", "fail", why),),
                        info={"stderr_tail": res.tail(1500)}, elapsed=res.elapsed)
    emulated = bool(doc.get("emulated"))
    results = []
    for s in doc.get("steps", []):
        data = {k: v for k, v in s.items() if k not in ("name", "status", "summary")}
        status = s.get("status", "error")
        results.append(Result(
            f"smoke.{s.get('name')}", "smoke", status if status in RANK_ORDER else "error",
            _label(str(s.get("summary", "")), emulated), details=data or None,
            fix=_fix(s), observed=_observed(s), expected=_expected(s)))
    info = {k: doc.get(k) for k in ("torch", "backend", "warnings", "options")}
    return SmokeRun(tuple(results), emulated=emulated, info=info, elapsed=res.elapsed)


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
    return max((r.status for r in results), key=RANK_ORDER.index, default="skip")
