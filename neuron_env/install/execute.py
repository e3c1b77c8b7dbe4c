"""Carry out a plan: the lock and the run's state (here), then its steps, one module each:
resolve (install/resolve.py: per index, then all; provenance) -> install (install/apply.py: a
hash-pinned lock file) -> verify (install/verify.py: in the target) -> the manifest
(install/records.py). The no-op fast path (install/noop.py) comes first, under the lock."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import tempfile
from dataclasses import dataclass, field

from neuron_env import __version__
from neuron_env.install import installers, mirrors
from neuron_env.install.apply import install
from neuron_env.install.lock import EnvLock, state_dir
from neuron_env.install.noop import nothing_to_do, up_to_date
from neuron_env.install.plan import Plan
from neuron_env.install.records import now, write_manifest
from neuron_env.install.report_parse import Item
from neuron_env.install.resolve import resolve
from neuron_env.install.steps import Log, Progress, StepResult, installer_env, run_step
from neuron_env.install.verify import verify
from neuron_env.matrix.model import Matrix
from neuron_env.probes.interpreter import probe_target
from neuron_env.report.model import Result
from neuron_env.util.atomic import safe_umask
from neuron_env.util.record import replace


@dataclass
class Outcome:
    status: str  # unchanged | installed | failed | refused
    results: list[Result] = field(default_factory=list)
    packages: list[dict] = field(default_factory=list)
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



def _sigterm_as_interrupt():
    def handler(signum, frame):
        raise KeyboardInterrupt
    with contextlib.suppress(ValueError):  # not the main thread
        return signal.signal(signal.SIGTERM, handler)
    return None


def execute(plan: Plan, m: Matrix, facts, opts: ExecOptions, progress: Progress,
            bundled_builder=None) -> Outcome:
    """facts: HostFacts from before the run (host + target). Returns the outcome; raises
    NeuronEnvError subclasses for refusals and failures that leave the environment unchanged."""
    prefix = plan.prefix
    plan = mirrors.with_mirrors(plan, m)  # pip's own indexes + files prefixes: provenance
    old_term = _sigterm_as_interrupt()
    try:  # umask >= 022: our files and the installers' (they inherit it) never group/world-writable
        with safe_umask(), EnvLock(state_dir(prefix), opts.lock_timeout, progress.say) as lk:
            return _locked(plan, m, facts, opts, progress, lk.directory, bundled_builder)
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


def _locked(plan, m, facts, opts, progress, sdir, bundled_builder) -> Outcome:
    """Under the lock: re-probe -> [nothing to do] | resolve -> install -> verify."""
    target = probe_target(plan.python)  # again: another install may have finished meanwhile
    facts = replace(facts, target=target)
    why = up_to_date(plan, target)
    if why:
        return _nothing_to_do(plan, m, facts, opts, progress, why)
    run = _Run(plan, m, facts, opts, progress, sdir)
    try:
        with tempfile.TemporaryDirectory(prefix="neuron-env-install-") as work:
            resolve(run, work, bundled_builder)
            if run.items:
                install(run, work)
            else:
                progress.say("Every package is already in place; recording the manifest")
        return verify(run)
    except KeyboardInterrupt:
        _interrupted(run)
        raise
    finally:
        run.log.close()


def _nothing_to_do(plan, m, facts, opts, progress, why: str) -> Outcome:
    progress.say(f"Nothing to do: {why}")
    out = Outcome("unchanged", manifest=facts.target.manifest_path, facts=facts)
    out.results += nothing_to_do(plan, m, facts, why, opts.python_flag, opts.matrix_flag)
    return out


class _Run:
    """The state of one install under the lock: its log, installer, items and outcome."""

    def __init__(self, plan, m, facts, opts, progress, sdir) -> None:
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
        self.records: list[dict] = []
        self.repair = False  # after an unfinished install: resolve (and record) the whole set
        progress.say(f"Installing into {plan.prefix} with {self.inst.name} "
                     f"(log: {self.log_path})")

    def manifest(self, status: str, error: str | None, previous=None) -> str:
        return write_manifest(self.plan, self.m, self.inst, self.records, status,
                               self.log_path, error=error, previous=previous)

    def step(self, name: str, argv: list[str], timeout: float, activity: str,
             env: dict | None = None, parallel: bool = False) -> StepResult:
        res = run_step(name, argv, timeout=timeout, env={**installer_env(), **(env or {})},
                       log=self.log, progress=self.progress, activity=activity,
                       parallel=parallel)
        self.out.steps.append(res)
        return res






def _interrupted(run: _Run) -> None:
    run.log.write("[neuron-env] interrupted\n")
    with contextlib.suppress(Exception):
        if run.out.packages:
            run.manifest("incomplete", "interrupted (Ctrl-C or SIGTERM) during install")
