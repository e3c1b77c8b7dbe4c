"""The verify step: the planned versions read back in the target (a fresh probe), pip check,
the manifest's final status, and doctor's backend checks on the result."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.install import installers
from neuron_env.install.plan import Plan
from neuron_env.install.report_parse import Item
from neuron_env.install.steps import StepResult
from neuron_env.matrix.model import Matrix
from neuron_env.probes.interpreter import TargetFacts, probe_target
from neuron_env.report.model import Result
from neuron_env.util.record import replace

if TYPE_CHECKING:
    from neuron_env.install.run_state import ExecOptions, InstallRun, Outcome


def _pip_check_result(res: StepResult) -> Result:
    ok = res.returncode == 0
    return Result(
        "install.check", "install", "pass" if ok else "fail",
        "pip check: no broken requirements" if ok else
        "pip check: " + (res.output.strip().splitlines() or ["failed"])[0],
        details=None if ok else {"output": res.output.strip()[-2000:]},
        fix=None if ok else "see the log; install the missing requirements or use a fresh "
        "--venv DIR")


def verify(run: InstallRun) -> Outcome:
    """Versions in the target, pip check, the manifest's final status, the verify checks."""
    run.progress.say("Verifying in the target")
    verify = _verify_versions(run.items, probe_target(run.plan.python))
    pip_check = run.step("pip check", installers.check_cmd(run.inst), 120,
                         "Checking dependencies (pip check)")
    out = run.out
    out.results += [verify, _pip_check_result(pip_check)]
    failed = verify.status == "fail" or pip_check.returncode != 0
    out.manifest = run.manifest("incomplete" if failed else "complete",
                                "verification failed after install" if failed else None,
                                previous=run.previous)
    out.facts = replace(run.facts, target=probe_target(run.plan.python))
    out.results += _verify_checks(run.plan, run.m, out.facts, run.opts)
    out.status = "installed" if not failed else "failed"
    return out


def _verify_versions(items: list[Item], target: TargetFacts) -> Result:
    wrong = []
    for it in items:
        d = target.dist(it.name)
        if d is None or d.version != it.version:
            wrong.append(f"{it.name}: planned {it.version}, found "
                         f"{d.version if d else 'nothing'}")
    if not target.usable:
        return Result("install.packages", "install", "fail",
                      f"the target no longer runs after install: {target.error}")
    if wrong:
        return Result("install.packages", "install", "fail", "; ".join(wrong),
                      fix="re-run neuron-env install")
    return Result("install.packages", "install", "pass",
                  f"{len(items)} package(s) installed and read back in the target"
                  if items else "every planned package already in place",
                  observed={it.name: it.version for it in items})


def _verify_checks(plan: Plan, m: Matrix, facts, opts: ExecOptions) -> list[Result]:
    return opts.verify_checks(plan, m, facts)
