"""The distributed trial's options and the payload every process of it gets (pure)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from neuron_env.errors import UsageError
from neuron_env.trial.options import TrialOptions

STRATEGIES = ("ddp", "fsdp2")
BACKENDS = {"neuron": "neuron", "cpu": "gloo", "cuda": "nccl"}
TOLERANCE = {"float32": (1e-4, 1e-5)}  # (rtol, atol): |a - b| <= atol + rtol * |b|
TOKEN = "NEURON_ENV_TRIAL_RUN"
PORT_VAR = "NEURON_ENV_TRIAL_PORT"  # a fixed rendezvous port (tests: a port in use)


@dataclass(frozen=True)
class DistOptions:
    world_size: int
    strategy: str = "ddp"
    nnodes: int = 1


def validate(o: TrialOptions, d: DistOptions) -> None:
    if d.strategy not in STRATEGIES:
        raise UsageError(f"--strategy {d.strategy!r}: expected ddp or fsdp2")
    if not 1 <= d.world_size <= 1024:
        raise UsageError(f"--world-size {d.world_size}: expected 1..1024")
    if d.nnodes < 1 or d.world_size % d.nnodes:
        raise UsageError(f"--nnodes {d.nnodes}: expected a divisor of --world-size "
                         f"{d.world_size}", hint="e.g. --world-size 4 --nnodes 2")
    if o.dtype != "float32" or o.autocast:
        raise UsageError("--world-size: the distributed trial compares float32 steps",
                         hint="drop --dtype/--autocast, or run them in the one-process trial")
    bad = [f for f, on in (("--compile", o.compile), ("--shapes", o.shapes),
                           ("--batch-sizes", o.batch_sizes)) if on]
    if bad:
        raise UsageError(f"--world-size: {', '.join(bad)} "
                         f"{'belongs' if len(bad) == 1 else 'belong'} to the one-process trial",
                         hint="run those without --world-size")


def payload(o: TrialOptions, d: DistOptions, run_dir: str, role: str) -> dict[str, Any]:
    rtol, atol = TOLERANCE["float32"]
    return {"role": role, "run_dir": run_dir, "model": o.payload()["model"],
            "device": o.device, "backend": BACKENDS[o.device], "strategy": d.strategy,
            "steps": max(1, o.steps), "lr": o.lr, "seed": o.seed, "iterations": o.iterations,
            "rtol": o.rtol if o.rtol is not None else rtol,
            "atol": o.atol if o.atol is not None else atol, "world_size": d.world_size,
            "reference": os.path.join(run_dir, "reference.pt")}
