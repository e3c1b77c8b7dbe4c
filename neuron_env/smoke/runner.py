"""Collect the smoke script run in the target (started by smoke/start.py, hard timeout) and
parse it into Results."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from neuron_env.inside import MARKER, STEP
from neuron_env.report.model import RANK, STATUSES, Result
from neuron_env.smoke.start import SmokeOptions, start
from neuron_env.util import proc
from neuron_env.util.record import factory, record


@record
class SmokeRun:
    results: tuple[Result, ...]
    emulated: bool = False
    info: dict = factory(dict)
    elapsed: float = 0.0


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
    res, where, doc = ins.res, ins.where, ins.doc
    if res.timed_out or doc is None:
        r = _timed_out(opts, where) if res.timed_out else _no_result(python, res, where)
        return SmokeRun((r,), info={"stderr_tail": res.tail(1500)}, elapsed=res.elapsed)
    return _from_doc(doc, res.elapsed)


def _timed_out(opts: SmokeOptions, where: str) -> Result:
    return Result(f"smoke.{where}", "smoke", "fail",
                  f"timed out after {opts.timeout:g}s during the {where} step: the device may "
                  "be hung (the whole process group was killed)", timed_out=True,
                  fix="check neuron-top / dmesg for a stuck device; raise --timeout if a "
                      "first compile is just slow")


def _no_result(python: str, res, where: str) -> Result:
    if res.error:
        why = f"could not start {python}: {res.error}"
    elif res.returncode is not None and res.returncode < 0:
        why = (f"the target crashed (signal {-res.returncode}) during the {where} step: "
               f"{res.tail(300) or 'no output'}")
    else:
        why = (f"the smoke script gave no result (exit {res.returncode}) during the {where} "
               f"step: {res.tail(300) or 'no output'}")
    return Result(f"smoke.{where}", "smoke", "fail", why)


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


@dataclass(frozen=True)
class Inside:
    """What an inside/ script left behind: its JSON document (or None), the last step it
    announced, and the finished subprocess (step markers removed from its stderr)."""

    doc: dict | None
    where: str
    res: proc.Completed


def collect(res: proc.Completed) -> Inside:
    """Parse a finished inside/ script: step markers on stderr, the JSON between MARKERs."""
    steps_seen = STEP.findall(res.stderr)
    res = res.replace(stderr=STEP.sub("", res.stderr).strip())
    doc = None
    if res.stdout.count(MARKER) >= 2:
        try:
            doc = json.loads(res.stdout.rsplit(MARKER, 2)[-2])
        except ValueError:
            doc = None
    return Inside(doc, steps_seen[-1] if steps_seen else "start-up", res)


def no_result(python: str, ins: Inside, what: str) -> str:
    """Why an inside/ script gave no document: could not start, crashed, or exited early."""
    return _no_result(python, ins.res, ins.where).summary.replace("the smoke script",
                                                                 f"the {what} script")


def inside_env() -> dict[str, str]:
    return dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONUNBUFFERED="1")
