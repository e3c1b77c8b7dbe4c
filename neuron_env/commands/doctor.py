"""`neuron-env doctor`: load matrix -> probe -> check -> Report (rendering is the CLI's)."""

from __future__ import annotations

import time

from neuron_env import checks
from neuron_env.commands import TOOL
from neuron_env.install.manifest import index_overrides
from neuron_env.matrix import catalog
from neuron_env.probes.facts import gather
from neuron_env.probes.host import make_root
from neuron_env.report.model import Report, exit_code
from neuron_env.util.record import factory, record

SCHEMA = "neuron-env.doctor/1"


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
    smoke_timeout: float = 300.0
    neuron_index_url: str | None = None
    pytorch_index_url: str | None = None
    tag_instance: bool = False
    publish_ssm: str | None = None
    strict_publish: bool = False
    reports: tuple[str, ...] = ()  # --report FORMAT:PATH, as given


def _check_root(root: str | None) -> None:
    from pathlib import Path

    from neuron_env.errors import ConfigurationError

    if root is not None and not Path(root).is_dir():
        raise ConfigurationError(f"--root {root}: no such directory",
                                 hint="pass the mount point of the image (or a fixture root)")


def run(opts: DoctorOptions, started=None) -> Report:
    """`started`: the target probe, already running (see probes.interpreter.start_probe)."""
    from neuron_env.report.render import parse_report_specs

    t0 = time.monotonic()
    parse_report_specs(list(opts.reports))  # a bad --report spec is exit 2 before any work
    matrix = catalog.select(opts.matrix)
    extra = (["instance.aws"] if opts.aws else []) + (["smoke.device"] if opts.smoke else [])
    ids = checks.select(opts.only, opts.skip, extra)
    _check_root(opts.root)
    if opts.publish_ssm is not None:
        from neuron_env.aws.publish import check_parameter_name

        check_parameter_name(opts.publish_ssm)
    root = make_root(opts.root)
    facts = gather(root, opts.python, opts.instance_type,
                   want_neuron_ls=any(i.startswith("driver.") for i in ids), started=started)
    if "instance.aws" in ids:
        from neuron_env.aws.facts import with_aws_facts

        facts = with_aws_facts(facts)
    ctx = checks.Context(
        python_flag=opts.python, matrix_flag=opts.matrix,
        index_overrides=index_overrides(matrix, {"neuron": opts.neuron_index_url,
                                                 "pytorch-cpu": opts.pytorch_index_url}))
    results = checks.run_checks(facts, matrix, ctx, ids)
    if "instance.aws" in ids:
        from neuron_env.aws.facts import instance_aws

        results.append(instance_aws(facts, matrix, ctx))
    if "smoke.device" in ids:
        results.append(_smoke(facts, opts))
    code = exit_code(results, opts.strict)
    if opts.tag_instance or opts.publish_ssm:
        from neuron_env.aws.publish import publish

        interim = Report(schema=SCHEMA, tool=TOOL, matrix={"release": matrix.release},
                         target=facts.serialize(), results=tuple(results), exit_code=code)
        published = publish(interim, opts.tag_instance, opts.publish_ssm, opts.strict_publish)
        results += published
        if opts.strict_publish and any(r.status == "fail" for r in published):
            code = max(code, 1)
    return Report(
        schema=SCHEMA, tool=TOOL,
        matrix={"release": matrix.release, "source": matrix.source, "bundled": matrix.bundled},
        target=facts.serialize(), results=tuple(results), exit_code=code,
        extra={"strict": opts.strict, "elapsed_s": round(time.monotonic() - t0, 3)},
    )


def write_reports(rep: Report, specs: tuple[str, ...], verbose: bool) -> None:
    """Write every --report FORMAT:PATH (atomically); an unwritable path is exit 2."""
    from neuron_env.errors import ConfigurationError
    from neuron_env.report.render import parse_report_specs, render, write_atomic

    for fmt, path in parse_report_specs(list(specs)):
        try:
            write_atomic(path, render(rep, fmt, verbose=verbose))
        except OSError as e:
            raise ConfigurationError(f"--report {fmt}:{path}: cannot write: "
                                     f"{e.strerror or e}") from None


def _smoke(facts, opts: DoctorOptions):
    from neuron_env.commands.smoke import device_check
    from neuron_env.report.model import Result
    from neuron_env.smoke.runner import SmokeOptions

    if not facts.target.usable:
        return Result("smoke.device", "smoke", "skip",
                      "target interpreter unusable (see python.version)")
    if facts.instance.assumed:
        return Result("smoke.device", "smoke", "skip",
                      f"instance type assumed ({facts.instance.type}): no target device here")
    return device_check(facts.target.path, SmokeOptions(size=256, iterations=5,
                                                        timeout=opts.smoke_timeout))
