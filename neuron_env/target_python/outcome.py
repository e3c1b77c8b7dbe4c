"""The outcome model of a target run: one `TargetRun` type (smoke and trial), and the Results
that say why a run gave no document: timed out, could not start, crashed, exited early."""

from __future__ import annotations

from typing import Any

from neuron_env.guards import proc
from neuron_env.report.model import Result
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


_KILL_FIX = ("nothing in neuron-env sends SIGKILL before its deadline: the kernel's "
             "out-of-memory killer does (check `dmesg | grep -i -e oom -e killed`; then a "
             "smaller batch or model, or a host with more memory), or a person or a job "
             "scheduler did")


def ended(returncode: int | None, timed_out: bool, timeout: float,
          elapsed: float | None = None, error: str | None = None) -> tuple[str, str]:
    """(what happened, what to do) for a target process that gave no result, in words: timed
    out after N s, ran out of memory, killed by signal S, exited with code C."""
    import signal

    if timed_out:
        return (f"timed out after {timeout:g}s (the --timeout limit: it was killed then)",
                HUNG_FIX)
    last = (error or "").strip().splitlines()[-1:] or [""]
    if "MemoryError" in last[0] or "out of memory" in (error or "").lower():
        return (f"ran out of memory ({last[0][:200]})",
                "a smaller batch (or more ranks), a smaller model, or more device/host memory")
    into = f" {elapsed:.1f}s into the {timeout:g}s limit" if elapsed is not None else ""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        if -returncode == signal.SIGKILL:
            return f"was killed by signal {-returncode} ({name}){into}", _KILL_FIX
        return (f"was killed by signal {-returncode} ({name}){into}",
                "a crash in native code (SIGSEGV, SIGABRT: a library or the device runtime) "
                "or a signal from outside (a person, a job scheduler); its stderr tail is in "
                "the details")
    if last[0]:
        return (f"exited with code {returncode}: {last[0][:300]}" if returncode else
                f"failed: {last[0][:300]}",
                "the traceback is in the details (the model's own code, or its device)")
    if returncode:
        return (f"exited with code {returncode} without a Python error{into}",
                "it ended itself (os._exit, sys.exit in the model, a native abort); its stderr "
                "tail is in the details")
    return ("ended without writing its result", "its stderr tail is in the details")
