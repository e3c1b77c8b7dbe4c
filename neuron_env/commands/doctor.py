"""`neuron-env doctor` as a pipeline of named steps (see `run`); rendering is the CLI's."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from neuron_env import checks
from neuron_env.commands import TOOL
from neuron_env.matrix import catalog
from neuron_env.matrix.overrides import index_overrides
from neuron_env.probes.facts import gather
from neuron_env.probes.host import make_root
from neuron_env.report import doctor_text
from neuron_env.report.model import Report, Result, exit_code
from neuron_env.util.names import canonicalize_name
from neuron_env.util.record import factory, record, replace

SCHEMA = "neuron-env.doctor/1"
WAIT_INTERVAL = 5.0  # seconds between --wait attempts


@record
class DoctorOptions:
    matrix: str | None = None
    python: str | None = None
    root: str | None = None
    instance_type: str | None = None
    only: list[str] = factory(list)
    skip: list[str] = factory(list)
    strict: bool = False
    aws: bool = False
    smoke: bool = False
    collectives: bool = False  # --collectives (with --smoke): collectives.all_reduce
    smoke_timeout: float = 300.0
    step_lines: bool = False  # say the smoke test's steps on stderr (text output, or a terminal)
    neuron_index_url: str | None = None
    pytorch_index_url: str | None = None
    tag_instance: bool = False
    publish_ssm: str | None = None
    strict_publish: bool = False
    reports: tuple[str, ...] = ()  # --report FORMAT:PATH, as given
    waivers: tuple = ()  # checks.waivers.Waiver, from --waive/--waivers
    wait: float = 0.0  # --wait SECONDS: re-check failing checks until they pass
    all_packages: bool = False  # list every distribution in target.packages
    expect_efa: bool = False  # --expect-efa: multi-node use intended, so a missing EFA fails
    fix: bool = False  # --fix: run the safe fixes (after `confirm`), then check again
    slurm_drain: bool = False  # drain this Slurm node when doctor fails; resume it when it passes
    verbose: bool = False  # reports show observed/expected too


def _check_root(root: str | None) -> None:
    from pathlib import Path

    from neuron_env.errors import ConfigurationError

    if root is not None and not Path(root).is_dir():
        raise ConfigurationError(f"--root {root}: no such directory",
                                 hint="pass the mount point of the image (or a fixture root)")


# -- the pipeline: each step small, named, testable alone ----------------------------------------
def validate(opts: DoctorOptions) -> None:
    """Bad --root / --publish-ssm / --collectives without --smoke are exit 2 before probing."""
    _check_root(opts.root)
    if opts.collectives and not opts.smoke:
        from neuron_env.errors import UsageError

        raise UsageError("--collectives runs on the device, after the smoke test",
                         hint="add --smoke (doctor --smoke --collectives)")
    if opts.publish_ssm is not None:
        from neuron_env.aws.publish import check_parameter_name

        check_parameter_name(opts.publish_ssm)


def select(opts: DoctorOptions) -> list[str]:
    extra = ((["instance.aws"] if opts.aws else []) + (["smoke.device"] if opts.smoke else [])
             + (["collectives.all_reduce"] if opts.collectives else []))
    return checks.select(opts.only, opts.skip, extra)


def probe(opts: DoctorOptions, ids: list[str], started=None):
    facts = gather(make_root(opts.root), opts.python, opts.instance_type,
                   want_neuron_ls=any(i.startswith("driver.") for i in ids), started=started,
                   want_companions="backend.companions" in ids)
    if "instance.aws" in ids:
        from neuron_env.aws.facts import with_aws_facts

        facts = with_aws_facts(facts)
    return facts


def neuronx_releases(facts, matrix) -> tuple | None:
    """The known releases whose rows pair the installed torch-neuronx, when the selected matrix
    does not (backend.pairing / backend.lineage name the release that built it); None when
    there is nothing to look up (the common case costs no extra matrix parse)."""
    t = facts.target
    nx = t.dist("torch-neuronx") if t.usable else None
    if nx is None or matrix.placeholder(nx.name, nx.version) or \
            matrix.pair_for_neuronx(nx.version) is not None:
        return None
    return catalog.releases_pairing(nx.version)


def check(facts, matrix, opts: DoctorOptions, ids: list[str]) -> list[Result]:
    ctx = checks.Context(
        python_flag=opts.python, matrix_flag=opts.matrix, own_prefix=sys.prefix,
        expect_efa=opts.expect_efa, neuronx_releases=neuronx_releases(facts, matrix),
        index_overrides={k: url for k, (url, _) in index_overrides(matrix, {
            "neuron": opts.neuron_index_url, "pytorch-cpu": opts.pytorch_index_url}).items()})
    return checks.run_checks(facts, matrix, ctx, ids)


def smoke(facts, opts: DoctorOptions, ids: list[str]) -> list[Result]:
    """The device steps: smoke.device, then (--collectives) collectives.all_reduce."""
    out = [_smoke(facts, opts)] if "smoke.device" in ids else []
    if "collectives.all_reduce" in ids:
        out.append(_collectives(facts, opts, out[0] if out else None))
    return out


def publish(facts, matrix, opts: DoctorOptions, results: list[Result]) -> tuple[list, int]:
    """--tag-instance / --publish-ssm: (their results, the exit code they force, 0 if none)."""
    if not (opts.tag_instance or opts.publish_ssm):
        return [], 0
    from neuron_env.aws.publish import publish as send

    interim = Report(schema=SCHEMA, tool=TOOL, matrix={"release": matrix.release},
                     target=facts.serialize(), results=tuple(results),
                     exit_code=exit_code(results, opts.strict))
    published = send(interim, opts.tag_instance, opts.publish_ssm, opts.strict_publish)
    forced = 1 if opts.strict_publish and any(r.status == "fail" for r in published) else 0
    return published, forced


def reduce(facts, matrix, opts: DoctorOptions, results: list[Result], published: list[Result],
           forced: int, t0: float) -> Report:
    """The exit code comes from the checks (publishing fails the run only when forced)."""
    waived: list = []
    if opts.waivers:  # (checks.waivers imports datetime: only when a waiver was given)
        from neuron_env.checks import waivers

        results, waived = waivers.apply(list(results), list(opts.waivers))
    code = max(exit_code(results, opts.strict), forced)
    return Report(
        schema=SCHEMA, tool=TOOL,
        matrix=catalog.provenance(matrix),
        target=target_doc(facts, matrix, opts.all_packages), results=(*results, *published),
        exit_code=code,
        extra={"strict": opts.strict, "elapsed_s": round(time.monotonic() - t0, 3),
               **({"waivers": waived} if waived else {})},
        view=doctor_text.render,
    )


PACKAGES_INLINE = 64  # up to this many distributions, target.packages lists them all
_RELEVANT_PREFIXES = ("torch", "neuron", "libneuron", "aws-neuron", "jax", "nki")


def target_doc(facts, matrix, all_packages: bool = False) -> dict:
    """facts.serialize(), with target.packages cut to what checks and pipelines read (the
    matrix's packages, torch*, neuron*) when the environment is large; --all-packages: all."""
    doc = facts.serialize()
    pk = doc["packages"]
    doc["packages_total"] = len(pk)
    if all_packages or len(pk) <= PACKAGES_INLINE:
        return doc
    names = {canonicalize_name(n) for i in matrix.indexes for n in i.packages}
    names |= {canonicalize_name(c.name) for c in matrix.companions}
    names |= {canonicalize_name(p.name) for p in matrix.placeholders} | {"pip"}
    doc["packages"] = {n: v for n, v in pk.items() if canonicalize_name(n) in names
                       or canonicalize_name(n).startswith(_RELEVANT_PREFIXES)}
    return doc


def run(opts: DoctorOptions, started=None) -> Report:
    """load matrix -> select -> probe -> check -> smoke -> publish -> reduce.
    `started`: the target probe, already running (see probes.interpreter.start_probe)."""
    from neuron_env.report.render import parse_report_specs

    t0 = time.monotonic()
    parse_report_specs(list(opts.reports))  # a bad --report spec is exit 2 before any work
    matrix = catalog.select(opts.matrix)
    validate(opts)
    ids = select(opts)
    facts = probe(opts, ids, started)
    results = check(facts, matrix, opts, ids) + smoke(facts, opts, ids)
    published, forced = publish(facts, matrix, opts, results)
    return reduce(facts, matrix, opts, results, published, forced, t0)


def command(opts: DoctorOptions, started=None,
            confirm: Callable[[list[str]], bool] = lambda commands: False) -> Report:
    """THE doctor command (the CLI parses flags and calls this): check (again while --wait),
    then --fix and check again, then --slurm-drain, then write every --report."""
    rep = run_waiting(opts, started)
    if opts.fix:
        rep = fix(rep, opts, confirm)
    if opts.slurm_drain:
        from neuron_env.fleet.slurm import drain_or_resume

        rep = drain_or_resume(rep)
    from neuron_env.report.render import write_reports

    write_reports(rep, opts.reports, opts.verbose)
    return rep


def fix(rep: Report, opts: DoctorOptions, confirm: Callable[[list[str]], bool]) -> Report:
    """Run the safe fixes `confirm` allows; when one ran, check again (the report describes
    the host after the fixes) and record what ran."""
    from neuron_env.commands import doctor_fix

    done = doctor_fix.apply(rep, confirm, lambda line: sys.stderr.write(line + "\n"))
    if any(d["ran"] for d in done):
        rep = run(opts)
    return replace(rep, extra=dict(rep.extra, fixes=done))


def run_waiting(opts: DoctorOptions, started=None, sleep=time.sleep) -> Report:
    """--wait SECONDS: run again while something fails (first boot: the driver is still
    loading) until everything passes or the time is up; every attempt is recorded."""
    t0 = time.monotonic()
    rep = run(opts, started)
    attempts = [_attempt(rep, t0)]
    while opts.wait > 0 and rep.exit_code == 1:
        left = opts.wait - (time.monotonic() - t0)
        if left <= 0:
            break
        sleep(min(WAIT_INTERVAL, left))
        rep = run(opts)
        attempts.append(_attempt(rep, t0))
    if opts.wait <= 0:
        return rep
    extra = dict(rep.extra, elapsed_s=round(time.monotonic() - t0, 3),
                 wait={"seconds": opts.wait, "attempts": attempts})
    return replace(rep, extra=extra)


def _attempt(rep: Report, t0: float) -> dict:
    return {"at_s": round(time.monotonic() - t0, 3), "exit_code": rep.exit_code,
            "failing": [r.id for r in rep.results if r.status in ("fail", "error")]}


def _smoke(facts, opts: DoctorOptions):
    from neuron_env.checks.device import SMOKE
    from neuron_env.commands.smoke import device_check
    from neuron_env.smoke.start import SmokeOptions

    if not facts.target.usable:
        return SMOKE.result("skip", "target interpreter unusable (see python.version)")
    if facts.instance.assumed:
        return SMOKE.result("skip", f"instance type assumed ({facts.instance.type}): no target "
                            "device here")
    live = None
    if opts.step_lines:
        from neuron_env.smoke.live import StepLines

        live = StepLines("doctor --smoke")
    return device_check(facts.target.path, SmokeOptions(size=256, iterations=5,
                                                        timeout=opts.smoke_timeout), live)


def _collectives(facts, opts: DoctorOptions, smoke_result: Result | None) -> Result:
    """collectives.all_reduce across the local devices; skipped when the device itself
    did not pass the smoke test (its result says why)."""
    from neuron_env.checks.device import ALL_REDUCE

    if smoke_result is not None and smoke_result.status not in ("pass", "warn"):
        return ALL_REDUCE.result("skip", f"the device smoke test did not pass "
                                 f"({smoke_result.status}: see smoke.device)")
    from neuron_env.commands.collectives import device_check

    return device_check(facts.target.path, timeout=opts.smoke_timeout)
