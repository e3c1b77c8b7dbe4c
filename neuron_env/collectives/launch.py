"""Pure: the exact multi-node command lines (torchrun, srun) that run the same test on every
node. Each rank then runs `neuron-env collectives --launched`, which reads its rank from the
launcher's environment (torchrun: RANK/WORLD_SIZE/MASTER_ADDR...; srun: SLURM_PROCID...)."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_env.collectives.options import CollectivesOptions, human_sizes
from neuron_env.errors import UsageError
from neuron_env.util.template import sh_join, values

KINDS = ("torchrun", "srun")
RDZV_PORT = 29500
COMM_ID_PORT = 62182  # NEURON_RT_ROOT_COMM_ID: the Neuron runtime's root communicator
# what AWS's multi-node Neuron examples export for EFA
EFA_ENV = (("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("FI_EFA_FORK_SAFE", "1"))


def rank_command(neuron_env: str | Sequence[str], python: str | None,
                 o: CollectivesOptions) -> list[str]:
    """neuron_env: its path, or the argv that runs it (`python -m neuron_env`)."""
    head = [neuron_env] if isinstance(neuron_env, str) else list(neuron_env)
    argv = [*head, "collectives", "--launched", "--device", o.device,
            "--ops", ",".join(o.ops), "--sizes", human_sizes(o.sizes), "--dtype", o.dtype,
            "--iterations", str(o.iterations), "--timeout", f"{o.timeout:g}"]
    if python:
        argv += ["--python", python]
    if o.backend:
        argv += ["--backend", o.backend]
    return argv


def render(kind: str, neuron_env: str | Sequence[str], python: str | None,
           o: CollectivesOptions, nodes: int, nproc: int | None) -> str:
    if kind not in KINDS:
        raise UsageError(f"--print-launch {kind!r}: expected one of {', '.join(KINDS)}")
    if nodes < 1:
        raise UsageError(f"--nodes {nodes}: expected at least 1")
    values((("--python", python),
            *(("neuron-env", w) for w in ([neuron_env] if isinstance(neuron_env, str)
                                          else neuron_env))))
    per_node = str(nproc) if nproc else "${NPROC_PER_NODE:?one rank per logical NeuronCore}"
    cmd = sh_join(rank_command(neuron_env, python, o))  # the one quoting (trial's too)
    return (_torchrun if kind == "torchrun" else _srun)(cmd, nodes, per_node)


def _exports(head: str) -> list[str]:
    lines = [f"export NEURON_RT_ROOT_COMM_ID={head}:{COMM_ID_PORT}"]
    lines += [f"export {k}={v}" for k, v in EFA_ENV]
    return lines


def _torchrun(cmd: str, nodes: int, per_node: str) -> str:
    head = "${HEAD_ADDR:?set HEAD_ADDR to the address of the first node}"
    return "\n".join([
        f"# run on each of the {nodes} nodes (the same line everywhere; torchrun's c10d",
        "# rendezvous assigns the ranks); the head node must be reachable on both ports",
        *_exports(head),
        f"torchrun --nnodes={nodes} --nproc-per-node={per_node} --rdzv-backend=c10d "
        f"--rdzv-endpoint={head}:{RDZV_PORT} --rdzv-id=neuron-env-collectives --no-python "
        f"-- {cmd}", ""])  # the launchers' options end with --


def _srun(cmd: str, nodes: int, per_node: str) -> str:
    return "\n".join([
        "#!/bin/bash",
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --ntasks-per-node={per_node}" if per_node.isdigit() else
        "#SBATCH --ntasks-per-node=64  # one rank per logical NeuronCore (trn2.48xlarge, LNC=2)",
        "#SBATCH --exclusive",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"export MASTER_ADDR MASTER_PORT={RDZV_PORT}",
        *_exports("$MASTER_ADDR"),
        f"srun --kill-on-bad-exit=1 -- {cmd}", ""])
