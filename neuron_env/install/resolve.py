"""The resolve step of an install: each governed requirement from its own index alone (no
dependencies), then everything together, Neuron packages pulled in as dependencies pinned back
to their own index, until the set settles; provenance checked (install/provenance.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Req
from packaging.specifiers import SpecifierSet

from neuron_env.errors import InstallError, ProvenanceError, ResolutionError
from neuron_env.install import installers, provenance
from neuron_env.install import manifest as install_manifest
from neuron_env.install.installers import Installer
from neuron_env.install.plan import EMULATOR, Plan
from neuron_env.install.records import records
from neuron_env.install.report_parse import Item, parse
from neuron_env.install.steps import Log, Progress, StepResult, installer_env, run_step
from neuron_env.matrix.model import Matrix
from neuron_env.report.model import Result
from neuron_env.util.names import canonicalize_name

if TYPE_CHECKING:
    from neuron_env.install.run_state import InstallRun

MAX_ROUNDS = 4


class Resolver:
    repair = False  # after an unfinished install: resolve (and record) the whole set

    def __init__(self, plan: Plan, m: Matrix, inst: Installer, log: Log, progress: Progress,
                 timeout: float, work: str, steps: list[StepResult]) -> None:
        self.plan, self.m, self.inst, self.log = plan, m, inst, log
        self.progress, self.timeout, self.work, self.steps = progress, timeout, work, steps
        self.n = 0

    def _dry_run(self, name: str, reqs: list[str], src: installers.Sources, no_deps: bool,
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

    def pin(self, index: str | None, reqs: list[str]) -> list[Item]:
        """Resolve governed requirements from their own index ONLY (no dependencies)."""
        use = self.plan.index(index)
        if use is None:  # governed packages only: the matrix, hence the plan, names their index
            raise InstallError(f"no index in the plan for {', '.join(reqs)}")
        src = installers.sources(use.url, [], self.plan.find_links, self.plan.offline)
        items = self._dry_run(f"resolve from {index}", reqs, src, True,
                              f"Resolving {' '.join(reqs)} from the {index} index ({use.url})")
        for it in items:
            got, _ = provenance.origin_of(it, self.plan, self.m)
            if got not in (index, "wheelhouse"):
                raise InstallError(provenance.outside(it, use.name, self.plan),
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
                for it in self.pin(want.name if want else None, [f"{f.name}{spec}"]):
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


def resolve(run: InstallRun, work: str, bundled_builder) -> None:
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
    run.records = run.out.packages = records(run.items, run.plan, run.m, run.target, bundled)
