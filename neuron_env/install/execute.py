"""Carry out a plan: the lock and the run's state (here), then its steps, one module each:
resolve (install/resolve.py: per index, then all; provenance) -> install (install/apply.py: a
hash-pinned lock file) -> verify (install/verify.py: in the target) -> the manifest
(install/records.py). The no-op fast path (install/noop.py) comes first, under the lock."""

from __future__ import annotations

import contextlib
import signal
import tempfile

from neuron_env.guards.atomic import safe_umask
from neuron_env.install import mirrors
from neuron_env.install.apply import install
from neuron_env.install.lock import EnvLock, state_dir
from neuron_env.install.noop import nothing_to_do, up_to_date
from neuron_env.install.plan import Plan
from neuron_env.install.resolve import resolve
from neuron_env.install.run_state import ExecOptions, InstallRun, Outcome
from neuron_env.install.steps import Progress
from neuron_env.install.verify import verify
from neuron_env.matrix.model import Matrix
from neuron_env.probes.interpreter import probe_target
from neuron_env.util.record import replace


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
    run = InstallRun(plan, m, facts, opts, progress, sdir)
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
    out.results += [nothing_to_do(why), *opts.verify_checks(plan, m, facts)]
    return out


def _interrupted(run: InstallRun) -> None:
    run.log.write("[neuron-env] interrupted\n")
    with contextlib.suppress(Exception):
        if run.out.packages:
            run.manifest("incomplete", "interrupted (Ctrl-C or SIGTERM) during install")
