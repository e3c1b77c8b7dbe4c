"""Compilation artifacts kept where the env-vars page says
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html):
TORCH_NEURONX_DEBUG_DIR (default /tmp/neuron_backend) is where compilation artifacts (FX graphs,
StableHLO IR, NEFF files) are saved, and TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS=1 keeps
them after execution (default: not kept); the compiler-artifacts page
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/about-compiler-artifacts.html)
puts the FX graph and StableHLO of each graph under that directory.

The emulator has no StableHLO or NEFF: it keeps what it has, each compiled graph's FX code and
its aten ops, in `<dir>/graph_<n>/` (the directory layout is the emulator's own), with an
EMULATED note saying what is absent.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import torch

from neuron_emulator._env import env_flag

DEFAULT_DIR = "/tmp/neuron_backend"  # the page's documented default
_graphs = itertools.count()


def _enabled() -> bool:
    return env_flag("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", False)


def preserve(gm: torch.fx.GraphModule, kind: str) -> Path | None:
    """Write one compiled graph's artifacts when preservation is on; returns its directory."""
    if not _enabled():
        return None
    root = Path(os.environ.get("TORCH_NEURONX_DEBUG_DIR", "").strip() or DEFAULT_DIR)
    d = root / f"graph_{next(_graphs):04d}_{kind}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "fx_graph.py").write_text(gm.code, encoding="utf-8")
    ops = sorted({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
    (d / "aten_ops.txt").write_text("\n".join(ops) + "\n", encoding="utf-8")
    (d / "EMULATED").write_text(
        "neuron-emulator: this graph ran on the CPU; no StableHLO IR or NEFF was produced.\n",
        encoding="utf-8")
    return d
