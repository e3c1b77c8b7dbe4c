"""What the steps of one install share: its options (ExecOptions), its outcome (Outcome) and
its state under the lock (InstallRun: the log, the installer, the resolved items). execute.py
makes one and hands it to resolve -> install (apply.py) -> verify; each of those imports it
from here, none imports execute.py (a line, not a circle: tests/unit/test_shape.py)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from neuron_env import __version__
from neuron_env.install import installers
from neuron_env.install.plan import Plan
from neuron_env.install.records import now, write_manifest
from neuron_env.install.report_parse import Item
from neuron_env.install.steps import Log, Progress, StepResult, installer_env, run_step
from neuron_env.matrix.model import Matrix
from neuron_env.report.model import Result


@dataclass
class Outcome:
    status: str  # unchanged | installed | failed | refused
    results: list[Result] = field(default_factory=list)
    packages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[StepResult] = field(default_factory=list)
    log: str | None = None
    manifest: str | None = None
    facts: object | None = None


@dataclass(frozen=True)
class ExecOptions:
    installer: str | None = None
    timeout: float = 1800.0
    lock_timeout: float = 900.0
    python_flag: str | None = None
    matrix_flag: str | None = None
    # doctor's backend checks on the installed target (plan, matrix, facts) -> results, given
    # by commands/install.py: install sits below checks/ and never imports it
    judge: Callable[[Plan, Matrix, Any], list[Result]] | None = None

    def verify_checks(self, plan: Plan, m: Matrix, facts: Any) -> list[Result]:
        return self.judge(plan, m, facts) if self.judge else []


class InstallRun:
    """The state of one install under the lock: its log, installer, items and outcome."""

    def __init__(self, plan: Plan, m: Matrix, facts: Any, opts: ExecOptions,
                 progress: Progress, sdir: str) -> None:
        self.plan, self.m, self.opts, self.progress = plan, m, opts, progress
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.log_path = os.path.join(sdir, "logs", f"install-{stamp}-{os.getpid()}.log")
        self.log = Log(self.log_path)
        self.log.write(f"neuron-env {__version__} install at {now()}\n"
                       f"plan: {plan.serialize()}\n")
        self.out = Outcome("failed", log=self.log_path, facts=facts)
        self.facts, self.target, self.previous = facts, facts.target, facts.target.manifest
        pip = self.target.dist("pip")
        self.inst = installers.choose(opts.installer, plan.python, pip is not None,
                                      pip.version if pip else None)
        self.items: list[Item] = []
        self.records: list[dict[str, Any]] = []
        self.repair = False  # after an unfinished install: resolve (and record) the whole set
        progress.say(f"Installing into {plan.prefix} with {self.inst.name} "
                     f"(log: {self.log_path})")

    def manifest(self, status: str, error: str | None, previous: Any = None) -> str:
        return write_manifest(self.plan, self.m, self.inst, self.records, status,
                              self.log_path, error=error, previous=previous)

    def step(self, name: str, argv: list[str], timeout: float, activity: str,
             env: dict[str, str] | None = None, parallel: bool = False) -> StepResult:
        res = run_step(name, argv, timeout=timeout, env={**installer_env(), **(env or {})},
                       log=self.log, progress=self.progress, activity=activity,
                       parallel=parallel)
        self.out.steps.append(res)
        return res
