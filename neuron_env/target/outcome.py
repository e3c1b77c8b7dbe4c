"""The outcome model of a target run: one `TargetRun` type (smoke and trial), and the Results
that say why a run gave no document: timed out, could not start, crashed, exited early."""

from __future__ import annotations

from typing import Any

from neuron_env.report.model import Result
from neuron_env.util import proc
from neuron_env.util.record import factory, record

HUNG_FIX = ("check neuron-top / dmesg for a stuck device; raise --timeout if a first compile "
            "is just slow")


@record
class TargetRun:
    """A finished smoke or trial run: its Results, emulated?, what else it said, how long."""

    results: tuple[Result, ...]
    emulated: bool = False
    info: dict[str, Any] = factory(dict)
    elapsed: float = 0.0


def why_no_result(python: str, res: proc.Completed, where: str, what: str) -> str:
    """Why an inside/ script gave no document: could not start, crashed, or exited early."""
    if res.error:
        return f"could not start {python}: {res.error}"
    if res.returncode is not None and res.returncode < 0:
        return (f"the target crashed (signal {-res.returncode}) during the {where} step: "
                f"{res.tail(300) or 'no output'}")
    return (f"the {what} script gave no result (exit {res.returncode}) during the {where} "
            f"step: {res.tail(300) or 'no output'}")


def timed_out(command: str, where: str, timeout: float, hung: str,
              details: dict[str, Any] | None = None) -> Result:
    return Result(f"{command}.{where}", command, "fail",
                  f"timed out after {timeout:g}s during the {where} step: {hung} (the whole "
                  "process group was killed)", timed_out=True, fix=HUNG_FIX, details=details)


def failed(command: str, python: str, res: proc.Completed, where: str, timeout: float,
           hung: str, details: dict[str, Any] | None = None) -> TargetRun:
    """The one-Result run of a target that timed out or gave no document."""
    r = (timed_out(command, where, timeout, hung, details) if res.timed_out else
         Result(f"{command}.{where}", command, "fail",
                why_no_result(python, res, where, command)))
    return TargetRun((r,), info={"stderr_tail": res.tail(1500)}, elapsed=res.elapsed)
