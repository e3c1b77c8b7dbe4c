"""Pure: the distributed trial's command lines. ONE builder for the torchrun agent line and the
rank script's argv, used by neuron-env's own launch (runner.py) and by the lines
`--print-launch` prints: `python -m torch.distributed.run` would put the operator's cwd
first on sys.path (a `json.py` there would run in the agent and every rank), so the module
runs through inside/run_module.py (target_python/launch.module_line), and the rank script by
its path (#45, finding 5)."""

from __future__ import annotations

import json
from typing import Any

from neuron_env.collectives.launch import COMM_ID_PORT, EFA_ENV, RDZV_PORT
from neuron_env.errors import UsageError
from neuron_env.target_python import launch
from neuron_env.trial.distributed.options import DistOptions, payload, validate
from neuron_env.trial.options import TrialOptions
from neuron_env.util.template import Raw, sh_join, values

TORCHRUN = "torch.distributed.run"


def agent_args(d: DistOptions, endpoint: str, run_id: str, *tail: str) -> list[str]:
    """One torchrun agent's arguments (the same line on every node; c10d assigns the ranks),
    then `tail` (the in-process launch: its local address and the rank script)."""
    return [f"--nnodes={d.nnodes}",
            f"--nproc-per-node={d.world_size // d.nnodes}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={endpoint}", f"--rdzv-id={run_id}", "--max-restarts=0",
            "--monitor-interval=0.5", *tail]


def rank_argv(doc: dict[str, Any]) -> list[str]:
    """The rank (or reference) script and its payload: run by its path (its own folder first on
    sys.path, never the cwd), after the interpreter, torchrun or srun."""
    return [launch.script_path("trial_dist.py"), json.dumps(doc)]


def launch_script(kind: str, python: str, o: TrialOptions, d: DistOptions) -> str:
    """The commands that run the same check on a real cluster (RUN_DIR: shared storage)."""
    if kind not in ("torchrun", "srun"):
        raise UsageError(f"--print-launch {kind!r}: expected torchrun or srun")
    validate(o, d)
    values((("--python", python), ("MODEL", o.model), ("--device", o.device)))
    rd = "${RUN_DIR:?a directory every node can read and write}"
    ref = sh_join([python, *rank_argv(payload(o, d, "@RUN_DIR@", "reference"))]).replace(
        "@RUN_DIR@", "'\"${RUN_DIR}\"'")
    rank = sh_join(rank_argv(payload(o, d, "@RUN_DIR@", "rank"))).replace(
        "@RUN_DIR@", "'\"${RUN_DIR}\"'")
    efa = [f"export {k}={v}" for k, v in EFA_ENV]
    head = [f"# neuron-env trial {o.model} --world-size {d.world_size} --strategy {d.strategy}"
            f" on {d.nnodes} node(s)", f": {rd}",
            "# 1. once, on one node: the one-process reference (the whole batch)", ref]
    tail = ["# 3. anywhere that reads $RUN_DIR: the verdict (each rank left rank<R>.json)",
            sh_join(["neuron-env", "trial", o.model, "--world-size", str(d.world_size),
                     "--strategy", d.strategy, "--nnodes", str(d.nnodes), "--device", o.device,
                     "--collect", Raw('"$RUN_DIR"')]), ""]
    if kind == "torchrun":
        hd = "${HEAD_ADDR:?the address of the first node}"
        line = sh_join(launch.module_line(python, TORCHRUN, *agent_args(
            d, "@HEAD@", "neuron-env-trial"))).replace(
            "@HEAD@", f"{hd}:{RDZV_PORT}")
        return "\n".join([*head, "# 2. on each node (the same line; c10d assigns the ranks)",
                          f"export NEURON_RT_ROOT_COMM_ID={hd}:{COMM_ID_PORT}", *efa,
                          f"{line} -- {rank}", *tail])
    return "\n".join(["#!/bin/bash", f"#SBATCH --nodes={d.nnodes}",
                      f"#SBATCH --ntasks-per-node={d.world_size // d.nnodes}",
                      "#SBATCH --exclusive", *head[1:],
                      'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
                      '| head -n 1)', f"export MASTER_PORT={RDZV_PORT}",
                      f"export NEURON_RT_ROOT_COMM_ID=$MASTER_ADDR:{COMM_ID_PORT}", *efa,
                      "# 2. every rank (the rank script reads SLURM_PROCID/SLURM_NTASKS)",
                      f"srun --kill-on-bad-exit=1 -- {sh_join([python])} {rank}", *tail])
