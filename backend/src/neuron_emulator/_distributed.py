"""torch.distributed backend "neuron" (emulated): collectives over gloo on the host.

Registered with `dist.Backend.register_backend("neuron", ..., devices=["cpu", "neuron"])`, so
`dist.init_process_group(backend="neuron")` works as in the TorchNeuron distributed guide. A
collective on device tensors reaches the emulator's dispatch like any op (c10d ops are dispatcher
ops); it runs on their host data, where this backend (gloo underneath) does the communication,
in place. DDP, FSDP2, DTensor and DeviceMesh sit on top unchanged.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

import torch.distributed as dist

NAME = "neuron"


def _create(store, rank: int, size: int, timeout):
    from torch.distributed import ProcessGroupGloo

    return ProcessGroupGloo(store, rank, size, timeout=timeout)


def register() -> None:
    if NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(NAME, _create, devices=["cpu", NAME])
    install_fsdp_patch()


def _fsdp_storage_patch(module) -> None:
    """FSDP2 frees and re-allocates unsharded parameters by resizing their storage; a device
    tensor's data lives in its host tensor, so resize that one (and keep the accounting)."""
    from neuron_emulator import _memory
    from neuron_emulator._tensor import NeuronTensor

    def through(original):
        def run(tensor):
            if isinstance(tensor, NeuronTensor):
                original(tensor._elem)
                _memory.retrack(tensor)
                return None
            return original(tensor)
        run.__name__ = original.__name__
        return run

    for name in ("alloc_storage", "free_storage"):
        if hasattr(module, name):
            setattr(module, name, through(getattr(module, name)))


FSDP_PARAM = "torch.distributed.fsdp._fully_shard._fsdp_param"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Patches FSDP2's storage helpers right after torch imports them (only if it does)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != FSDP_PARAM:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _fsdp_storage_patch(module)
        spec.loader.exec_module = exec_module
        return spec


def install_fsdp_patch() -> None:
    if FSDP_PARAM in sys.modules:
        _fsdp_storage_patch(sys.modules[FSDP_PARAM])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
