"""Carry out a plan: lock, no-op fast path, resolve (per index, then all), provenance, install
from a hash-pinned lock, verify in the target, record the install manifest."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Req
from packaging.specifiers import SpecifierSet

from neuron_env import __version__
from neuron_env.errors import (
    ConfigurationError,
    InstallError,
    InstallFailed,
    ProvenanceError,
    ResolutionError,
)
from neuron_env.install import installers, mirrors, provenance
from neuron_env.install import manifest as install_manifest
from neuron_env.install.installers import Installer
from neuron_env.install.lock import EnvLock, state_dir
from neuron_env.install.noop import nothing_to_do, up_to_date, verify_checks
from neuron_env.install.plan import EMULATOR, Plan
from neuron_env.install.report_parse import Item, parse
from neuron_env.install.steps import Log, Progress, StepResult, installer_env, run_step
from neuron_env.matrix.model import Matrix
from neuron_env.probes.interpreter import TargetFacts, probe_target
from neuron_env.report.model import Result
from neuron_env.util.atomic import safe_umask
from neuron_env.util.names import canonicalize_name
from neuron_env.util.record import replace

MAX_ROUNDS = 4


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


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the no-op fast path -------------------------------------------------------------------
# -- resolution -----------------------------------------------------------------------------
class Resolver:
    repair = False  # after an unfinished install: resolve (and record) the whole set

    def __init__(self, plan: Plan, m: Matrix, inst: Installer, log: Log, progress: Progress,
                 timeout: float, work: str, steps: list[StepResult]) -> None:
        self.plan, self.m, self.inst, self.log = plan, m, inst, log
        self.progress, self.timeout, self.work, self.steps = progress, timeout, work, steps
        self.n = 0

    def _dry_run(self, name: str, reqs: list[str], src: list[str], no_deps: bool,
                 activity: str) -> list[Item]:
        self.n += 1
        report = os.path.join(self.work, f"report-{self.n}.json")
        argv = installers.resolve_cmd(self.inst, report, reqs, src, no_deps, self.repair)
        res = run_step(name, argv, timeout=self.timeout, env={**installer_env(), **src.env},
                       log=self.log,
                       progress=self.progress, activity=activity)
        self.steps.append(res)
        if res.returncode != 0:
            what, fix = installers.diagnose(res.output)
            raise ResolutionError(f"resolving {', '.join(reqs)} failed: {what}",
                                  hint=f"{fix} (installer output: {self.log.path})")
        with open(report, encoding="utf-8") as f:
            return parse(f.read())

    def pin(self, index: str, reqs: list[str]) -> list[Item]:
        """Resolve governed requirements from their own index ONLY (no dependencies)."""
        use = self.plan.index(index)
        src = installers.sources(use.url, [], self.plan.find_links, self.plan.offline)
        items = self._dry_run(f"resolve from {index}", reqs, src, True,
                              f"Resolving {' '.join(reqs)} from the {index} index ({use.url})")
        for it in items:
            got, _ = provenance.origin_of(it, self.plan, self.m)
            if got not in (index, "wheelhouse"):
                raise InstallError(provenance.outside(it, index, self.plan),
                                   hint="check pip's configuration (pip config list) for "
                                        "find-links or indexes that add other sources")
        return items

    def resolve(self, bundled: dict[str, str]) -> list[Item]:
        plan, m = self.plan, self.m
        pins: dict[str, Item] = {}
        by_index: dict[str, list[str]] = {}
        for r in plan.requirements:
            if r.index and r.source == "index":
                by_index.setdefault(r.index, []).append(r.spec)
        for index, reqs in by_index.items():
            for it in self.pin(index, reqs):
                pins[it.key] = it
        loose = [r.spec for r in plan.requirements if not r.index and r.source == "index"]
        for _ in range(MAX_ROUNDS):
            reqs = [it.lock_line().split(" --hash")[0] for it in pins.values()]
            reqs += [spec for r in plan.requirements if r.index and r.source == "index"
                     if canonicalize_name(r.name) not in pins for spec in [r.spec]]
            reqs += loose + [f"{n} @ {Path(p).as_uri()}" for n, p in bundled.items()]
            extra = [i.url for i in plan.indexes]
            src = installers.sources(None, extra, plan.find_links, plan.offline, plan.public)
            items = self._dry_run("resolve all", reqs, src, False,
                                  "Resolving dependencies (public index for non-Neuron "
                                  "packages)")
            foreign = provenance.foreign_governed(items, plan, m)
            foreign = [f for f in foreign if f.key not in pins
                       and not m.placeholder(f.name, f.version)]
            if not foreign:
                break
            for f in foreign:  # a Neuron package pulled in as a dependency: pin it at home
                want = m.index_for(f.name)
                spec = _spec_from_dependents(f.key, items)
                for it in self.pin(want.name, [f"{f.name}{spec}"]):
                    pins[it.key] = it
        else:
            raise InstallError("resolution did not settle after pinning Neuron dependencies",
                               hint=f"see {self.log.path}")
        problems = provenance.problems(items, plan, m)
        if problems:
            raise ProvenanceError(problems)
        return items



def _spec_from_dependents(key: str, items: list[Item]) -> str:
    spec = SpecifierSet()
    for it in items:
        for r in it.requires:
            try:
                req = Req(r)
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) == key and (req.marker is None
                                                        or "extra" not in str(req.marker)):
                spec &= req.specifier
    return str(spec)


# -- the whole run ------------------------------------------------------------------------------
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
            _resolve(run, work, bundled_builder)
            if run.items:
                _install(run, work)
            else:
                progress.say("Every package is already in place; recording the manifest")
        return _verify(run)
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
        self.log.write(f"neuron-env {__version__} install at {_now()}\n"
                       f"plan: {plan.serialize()}\n")
        self.out = Outcome("failed", log=self.log_path, facts=facts)
        self.facts, self.target, self.previous = facts, facts.target, facts.target.manifest
        pip = self.target.dist("pip")
        self.inst = installers.choose(opts.installer, plan.python, pip is not None,
                                      pip.version if pip else None)
        self.items: list[Item] = []
        self.records: list[dict] = []
        progress.say(f"Installing into {plan.prefix} with {self.inst.name} "
                     f"(log: {self.log_path})")

    def manifest(self, status: str, error: str | None, previous=None) -> str:
        return _write_manifest(self.plan, self.m, self.inst, self.records, status,
                               self.log_path, error=error, previous=previous)

    def step(self, name: str, argv: list[str], timeout: float, activity: str,
             env: dict | None = None, parallel: bool = False) -> StepResult:
        res = run_step(name, argv, timeout=timeout, env={**installer_env(), **(env or {})},
                       log=self.log, progress=self.progress, activity=activity,
                       parallel=parallel)
        self.out.steps.append(res)
        return res


def _resolve(run: _Run, work: str, bundled_builder) -> None:
    bundled = {}
    if any(r.source == "bundled" for r in run.plan.requirements):
        bundled[EMULATOR] = str(bundled_builder(Path(work)))
    resolver = Resolver(run.plan, run.m, run.inst, run.log, run.progress, run.opts.timeout,
                        work, run.out.steps)
    resolver.repair = run.repair = install_manifest.unfinished(run.previous)
    run.items = resolver.resolve(bundled)
    run.out.results.append(Result(
        "install.provenance", "install", "pass",
        f"{len(run.items)} package(s) to install; every Neuron package from its own index",
        observed={it.name: it.version for it in run.items}))
    run.records = run.out.packages = _records(run.items, run.plan, run.m, run.target, bundled)


def _install(run: _Run, work: str) -> None:
    """Manifest `incomplete` first, then the installer on a hash-pinned lock file."""
    items = run.items
    try:
        run.manifest("incomplete", "install started; not finished")
    except OSError as e:
        raise ConfigurationError(
            f"cannot write the install manifest in {run.plan.prefix}: {e.strerror or e}; "
            "nothing was installed",
            hint="free disk space in the environment, or choose a writable --venv DIR") from None
    lock_file = os.path.join(work, "lock.txt")
    with open(lock_file, "w", encoding="utf-8") as f:  # no credentials: mirrors.auth_env
        f.write("".join(it.lock_line() + "\n" for it in items))
    hashes = all(it.sha256 for it in items)
    res = run.step(f"install ({run.inst.name})",
                   installers.install_cmd(run.inst, run.plan.python, lock_file, hashes,
                                          run.repair),
                   run.opts.timeout,
                   f"Installing {len(items)} package(s): "
                   + ", ".join(f"{i.name} {i.version}" for i in items[:6])
                   + (" ..." if len(items) > 6 else ""), env=mirrors.auth_env(run.plan),
                   parallel=run.inst.name == "uv")
    if res.returncode != 0:
        what, fix = installers.diagnose(res.output)
        with contextlib.suppress(OSError):
            run.manifest("incomplete", f"install failed: {what}")
        raise InstallFailed(what, fix, run.log_path, run.plan.prefix)


def _pip_check_result(res: StepResult) -> Result:
    ok = res.returncode == 0
    return Result(
        "install.check", "install", "pass" if ok else "fail",
        "pip check: no broken requirements" if ok else
        "pip check: " + (res.output.strip().splitlines() or ["failed"])[0],
        details=None if ok else {"output": res.output.strip()[-2000:]},
        fix=None if ok else "see the log; install the missing requirements or use a fresh "
        "--venv DIR")


def _verify(run: _Run) -> Outcome:
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


def _interrupted(run: _Run) -> None:
    run.log.write("[neuron-env] interrupted\n")
    with contextlib.suppress(Exception):
        if run.out.packages:
            run.manifest("incomplete", "interrupted (Ctrl-C or SIGTERM) during install")


def _records(items, plan, m, target, bundled) -> list[dict]:
    recs = []
    for it in items:
        idx, url = provenance.origin_of(it, plan, m)
        origin = "bundled" if it.key in {canonicalize_name(k) for k in bundled} else (
            "wheelhouse" if idx == "wheelhouse" else "index" if idx else "dependency")
        recs.append({"name": it.name, "version": it.version,
                     "index": idx if idx != "wheelhouse" else None, "index_url": url,
                     "url": it.url, "sha256": it.sha256, "origin": origin})
    done = {it.key for it in items}
    for r in plan.requirements:  # already in place: record what is there, not installed by us
        key = canonicalize_name(r.name)
        d = target.dist(r.name)
        if key in done or d is None:
            continue
        old = next((p for p in (target.manifest or {}).get("packages") or []
                    if canonicalize_name(str(p.get("name"))) == key
                    and str(p.get("version")) == d.version), None)
        recs.append(old or {"name": d.name, "version": d.version, "index": None,
                            "index_url": None, "url": None, "sha256": None,
                            "origin": "present"})
    return recs


def _write_manifest(plan, m, inst, records, status, log_path, error=None, previous=None) -> str:
    doc = {"schema": install_manifest.SCHEMA, "tool": {"name": "neuron-env",
                                                       "version": __version__},
           "created": _now(), "matrix": {"release": m.release, "source": m.source},
           "backend": plan.backend, "status": status, "installer": inst.name,
           "plan": {"key": plan.key, "requirements": [r.spec for r in plan.requirements],
                    "pair": {"torch": str(plan.pair.torch)}, "forced": list(plan.forced)},
           "packages": records, "log": log_path}
    if error:
        doc["error"] = error
        doc["fix"] = "re-run neuron-env install"
    return install_manifest.write(plan.prefix, doc)


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
    return verify_checks(plan, m, facts, opts.python_flag, opts.matrix_flag)
