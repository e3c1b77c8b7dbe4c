"""`neuron-env collectives`: flags -> CollectivesOptions -> the boundary."""

import contextlib
import sys
from enum import Enum

import typer

from neuron_env.cli.app import (
    Device,
    DoctorFmt,
    app,
    emit,
    positive,
    python_option,
    seconds,
    split,
)


class Dtype(str, Enum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"
    int32 = "int32"


@app.command()
def collectives(
    python: str = python_option(),
    device: Device = typer.Option(Device.neuron, "--device", help="Where the ranks compute."),
    backend: str = typer.Option(None, "--backend", metavar="NAME",
                                help="Process-group backend (default: "
                                     "neuron on neuron, gloo on cpu, nccl on cuda)."),
    world_size: int = typer.Option(None, "--world-size", callback=positive, metavar="N",
                                   help="Ranks on this host (default: "
                                        "one per visible device; 2 on the CPU)."),
    ops: list[str] = typer.Option(None, "--ops", metavar="OP,..",
                                  help="all_reduce,all_gather,reduce_scatter,"
                                       "broadcast,all_to_all,send_recv (default: all)."),
    sizes: str = typer.Option(None, "--sizes", metavar="SIZE,..",
                              help="8B..16MB (x4 steps) or a list: 1K,4M."),
    dtype: Dtype = typer.Option(Dtype.float32, "--dtype", help="The tensors' dtype."),
    iterations: int = typer.Option(5, "--iterations", callback=positive, metavar="N",
                                   help="Timed iterations per op and size."),
    timeout: float = typer.Option(300.0, "--timeout", metavar="SECONDS", callback=seconds,
                                  help="Hard limit for the whole run (s); "
                                  "every rank is killed then."),
    print_launch: str = typer.Option(None, "--print-launch", metavar="torchrun|srun",
                                     help="Print the multi-node command instead of running."),
    nodes: int = typer.Option(2, "--nodes", callback=positive, metavar="N",
                              help="With --print-launch: how many nodes."),
    nproc_per_node: int = typer.Option(None, "--nproc-per-node", callback=positive, metavar="N",
                                       help="With --print-launch: "
                                            "ranks per node (default: one per logical core)."),
    launched: bool = typer.Option(False, "--launched", help="Run as ONE rank started by "
                                  "torchrun/srun (what --print-launch prints)."),
    format: DoctorFmt = typer.Option(DoctorFmt.text, "--format", ),
) -> None:
    """Check torch.distributed collectives. Each checked exactly; nccl-tests bandwidths."""
    from neuron_env.collectives.options import CollectivesOptions, parse_ops, parse_sizes
    from neuron_env.commands import collectives as cmd

    def produce():
        o = CollectivesOptions(device=device.value, backend=backend, world_size=world_size,
                               ops=parse_ops(split(ops)), sizes=parse_sizes(sizes),
                               dtype=dtype.value, iterations=iterations, timeout=timeout)
        if print_launch:
            return cmd.launch_doc(print_launch, python, o, nodes, nproc_per_node)
        return cmd.run(python, o, launched=launched)

    if launched and cmd.launched_rank() != 0:
        # one report per job: rank 0's (it holds every rank's rows); the others say theirs on
        # stderr, so torchrun/srun's merged stdout stays one document
        with contextlib.redirect_stdout(sys.stderr):
            emit(produce, format.value, cmd.SCHEMA)
    emit(produce, format.value, cmd.SCHEMA)
