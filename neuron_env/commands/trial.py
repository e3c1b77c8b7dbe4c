"""`neuron-env trial MODEL`: the user's model on the device vs a CPU float32 reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.commands import TOOL
from neuron_env.cost.prices import Price
from neuron_env.guards import proc
from neuron_env.probes.interpreter import resolve_target
from neuron_env.report.model import Document, Report, exit_code
from neuron_env.trial import runner, views
from neuron_env.trial.options import TrialFlags, TrialOptions, validate

if TYPE_CHECKING:
    from neuron_env.guards.atomic import PendingOutput

SCHEMA = "neuron-env.trial/1"


Started = tuple[str, str, proc.Running, "PendingOutput | None"]


def start(python: str | None, opts: TrialOptions) -> Started:
    """Validate, resolve the target and start it (before the rest of neuron-env is imported).
    --save-baseline FILE: the target writes a temporary file the one writer made next to FILE
    (guards/atomic.PendingOutput); it replaces FILE only once the baseline step passed."""
    from neuron_env.guards.atomic import PendingOutput

    validate(opts)
    path, by = resolve_target(python)
    pending = PendingOutput(opts.save_baseline) if opts.save_baseline else None
    try:
        return path, by, runner.start(path, opts, pending.release() if pending else None), \
            pending
    except BaseException:
        if pending is not None:
            pending.discard()
        raise


def trial(started: Started, opts: TrialOptions, live=None,
          price: Price | None = None) -> Report:
    """price: `--price-per-hour`/`--aws`/`--instance-type`/`--region` gave one: trial.cost is
    added (one process's steady state)."""
    path, by, running, pending = started
    try:
        tr = runner.finish(running, path, opts, live)
    except BaseException:
        if pending is not None:
            pending.discard()
        raise
    if pending is not None:
        saved = any(r.id == "trial.baseline" and r.status == "pass" for r in tr.results)
        if saved:
            pending.commit()
        else:
            pending.discard()
    info = dict(tr.info)
    batch = info.pop("batch_size", None)
    results = tuple(no_torch(r, path, by) for r in tr.results)
    if price is not None:
        from neuron_env.trial.cost import cost

        results = (*results, cost(results, info.get("timing"), batch, price, tr.emulated,
                                  opts.device))
    target = {"interpreter": {"path": path, "chosen_by": by}, "model": opts.model,
              "device": opts.device, "dtype": opts.dtype, "autocast": opts.autocast,
              "emulated": tr.emulated, **info}
    return Report(schema=SCHEMA, tool=TOOL, matrix=None, target=target, results=results,
                  exit_code=exit_code(results),
                  extra={"elapsed_s": round(tr.elapsed, 3), "emulated": tr.emulated},
                  view=views.render_text, markdown=views.render_markdown)


def no_torch(r, path: str, by: str, venv: str | None = None):
    """trial.import failed: say which interpreter was tried (and why it was chosen) and, where
    the rehearsal venv exists, that --python can point there."""
    import os

    from neuron_env.report.model import REHEARSAL_VENV, REHEARSE
    from neuron_env.util.record import replace

    if r.id != "trial.import" or r.status != "fail":
        return r
    venv = venv or os.path.expanduser(REHEARSAL_VENV)
    there = os.path.join(venv, "bin", "python")
    summary = f"{r.summary} (in {path}, chosen by {by})"
    if os.path.isfile(there) and os.path.realpath(there) != os.path.realpath(path):
        fix = (f"torch is not installed in {path}; the rehearsal venv {venv} exists: "
               f"rerun with --python {there}")
    else:
        fix = (f"install torch into {path}: neuron-env install --python {path}; or, without "
               f"a Neuron device, rehearse: {REHEARSE}")
    return replace(r, summary=summary, fix=fix)


def distributed(python: str | None, opts: TrialOptions, dist_opts, cost_opts) -> Report:
    """`--world-size N`: the distributed trial (trial/distributed.py, trial/dist_command.py)."""
    from neuron_env.trial import dist_command
    from neuron_env.trial.distributed import validate as validate_dist

    validate(opts)
    validate_dist(opts, dist_opts)
    path, by = resolve_target(python)
    return dist_command.run(path, by, opts, dist_opts, cost_opts)


def distributed_launch(python: str | None, opts: TrialOptions, dist_opts, kind: str):
    """`--world-size N --print-launch torchrun|srun`: the commands for a real cluster."""
    from neuron_env.report.envelope import envelope
    from neuron_env.trial.distributed import launch_script

    validate(opts)
    script = launch_script(kind, python or "python3", opts, dist_opts)
    return Document(envelope("neuron-env.collectives-launch/1", 0, launcher=kind,
                             nodes=dist_opts.nnodes, script=script), lambda b: b["script"])


def run_flags(flags: TrialFlags) -> Report | Document:
    """`neuron-env trial` for a command line (cli/trial.py hands its TrialFlags): every
    --report written, on success too. A bad --report spec is exit 2 before any work."""
    from neuron_env.report.render import parse_report_specs, write_reports

    parse_report_specs(list(flags.report))
    out = _run(flags)
    write_reports(out, flags.report, flags.verbose)
    return out


def _run(flags: TrialFlags) -> Report | Document:
    """One process, the distributed trial, or its launch lines."""
    from neuron_env.smoke.live import for_format

    live = for_format(flags.format, "trial")
    opts = flags.options()
    if flags.world_size is not None or flags.print_launch is not None:
        from neuron_env.trial.dist_command import CostOptions
        from neuron_env.trial.distributed import DistOptions

        d = DistOptions(world_size=flags.world_size or 2, strategy=flags.strategy,
                        nnodes=flags.nnodes)
        if flags.print_launch is not None:
            return distributed_launch(flags.python, opts, d, flags.print_launch)
        return distributed(flags.python, opts, d, CostOptions(
            price_per_hour=flags.price_per_hour, instance_type=flags.instance_type,
            region=flags.region, aws=flags.aws, collect=flags.collect))
    started = start(flags.python, opts)  # the target imports torch while we import the rest
    price = None
    if flags.price_per_hour is not None or flags.aws or flags.instance_type or flags.region:
        from neuron_env.cost.prices import choose  # one process's cost

        price = choose(flags.price_per_hour, flags.instance_type, flags.region, flags.aws)
    return trial(started, opts, live, price)
