"""`neuron-env trial MODEL`: the user's model on the device vs a CPU float32 reference."""

from __future__ import annotations

from neuron_env.commands import TOOL
from neuron_env.cost.prices import Price
from neuron_env.probes.interpreter import resolve_target
from neuron_env.report.model import Report, exit_code
from neuron_env.trial import runner, views
from neuron_env.trial.options import TrialOptions, validate
from neuron_env.util import proc

SCHEMA = "neuron-env.trial/1"


def start(python: str | None, opts: TrialOptions) -> tuple[str, str, proc.Running]:
    """Validate, resolve the target and start it (before the rest of neuron-env is imported)."""
    validate(opts)
    path, by = resolve_target(python)
    return path, by, runner.start(path, opts)


def trial(started: tuple[str, str, proc.Running], opts: TrialOptions, live=None,
          price: Price | None = None) -> Report:
    """price: `--price-per-hour`/`--aws`/`--instance-type` gave one: trial.cost is added."""
    path, by, running = started
    tr = runner.finish(running, path, opts, live)
    info = dict(tr.info)
    batch = info.pop("batch_size", None)
    results = tr.results
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
    from neuron_env.report.model import Document
    from neuron_env.trial.distributed import launch_script

    validate(opts)
    script = launch_script(kind, python or "python3", opts, dist_opts)
    return Document(envelope("neuron-env.collectives-launch/1", 0, launcher=kind,
                             nodes=dist_opts.nnodes, script=script), lambda b: b["script"])
