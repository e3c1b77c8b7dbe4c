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
import warnings
from pathlib import Path

import torch

from neuron_emulator import _files
from neuron_emulator._env import env_flag

DEFAULT_DIR = "/tmp/neuron_backend"  # the page's documented default
_graphs = itertools.count()
_skipped: set[str] = set()  # debug directories refused (one warning each)


def _enabled() -> bool:
    return env_flag("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", False)


def _skip(root: str, why: str) -> None:
    if root not in _skipped:
        _skipped.add(root)
        warnings.warn(f"neuron (emulated): compilation artifacts not kept: {why} (set "
                      "TORCH_NEURONX_DEBUG_DIR to a directory of your own)", UserWarning,
                      stacklevel=3)


def preserve(gm: torch.fx.GraphModule, kind: str) -> Path | None:
    """Write one compiled graph's artifacts when preservation is on; returns its directory.
    The debug directory (default /tmp/neuron_backend: a predictable name in a world-writable
    place) is made 0700 or used only when it is this user's and no one else can write it;
    otherwise nothing is written and a warning says why (_files.py)."""
    if not _enabled():
        return None
    root = os.environ.get("TORCH_NEURONX_DEBUG_DIR", "").strip() or DEFAULT_DIR
    name = f"graph_{next(_graphs):04d}_{kind}"
    ops = sorted({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
    try:
        root_fd = _files.private_dir(root)
    except _files.Untrusted as e:
        _skip(root, str(e))
        return None
    try:
        fd = _files.sub_dir(root_fd, name)
        try:
            _files.write_file(fd, "fx_graph.py", gm.code)
            _files.write_file(fd, "aten_ops.txt", "\n".join(ops) + "\n")
            _files.write_file(fd, "EMULATED", "neuron-emulator: this graph ran on the CPU; no "
                              "StableHLO IR or NEFF was produced.\n")
        finally:
            os.close(fd)
    except (_files.Untrusted, OSError) as e:
        _skip(root, str(e))
        return None
    finally:
        os.close(root_fd)
    return Path(root) / name
