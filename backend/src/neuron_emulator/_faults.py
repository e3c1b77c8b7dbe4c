"""Fault injection for testing tools that test devices (neuron-env's smoke test).

NEURON_EMULATOR_FAULT holds comma-separated faults; none is active by default:
  hang     matmul ops (mm, bmm, addmm, baddbmm, mv) never return
  perturb  matmul results are off by about 1e-2 relative: a wrong-results device
  noisy    the backend prints to stdout on load and on each matmul
  crash    the process dies with SIGSEGV while the backend loads (autoload)
  fallback matmul ops count as CPU fallbacks (to test fallback reporting)
(Device memory limits and accounting live in _memory.py.)
"""

from __future__ import annotations

import os
import signal
import sys
import time

import torch

MATMULS = {"mm", "bmm", "addmm", "baddbmm", "mv", "addmv"}
_active = frozenset(f.strip() for f in os.environ.get("NEURON_EMULATOR_FAULT", "").split(",")
                    if f.strip())


def active(name: str) -> bool:
    return name in _active


def on_load() -> None:
    if "crash" in _active:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "noisy" in _active:
        print("neuron-emulator: hello from a noisy backend")
        sys.stdout.flush()


def before(func) -> None:
    if not _active:
        return
    name = func.overloadpacket.__name__
    if name in MATMULS:
        if "noisy" in _active:
            print(f"neuron-emulator: running {name}")
        if "hang" in _active:
            while True:
                time.sleep(3600)


def after(func, out):
    if "perturb" in _active and func.overloadpacket.__name__ in MATMULS and \
            isinstance(out, torch.Tensor) and out.is_floating_point():
        g = torch.Generator().manual_seed(1234)
        noise = torch.randn(out.shape, generator=g, dtype=torch.float32).to(out.dtype)
        return out + noise * (out.abs().mean() * 1e-2 + 1e-3)
    return out
