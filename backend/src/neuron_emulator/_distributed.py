"""torch.distributed backend "neuron" (emulated): collectives over gloo on the host.

Registered with `dist.Backend.register_backend("neuron", ..., devices=["cpu", "neuron"])`, so
`dist.init_process_group(backend="neuron")` works as in the TorchNeuron distributed guide. A
collective on device tensors reaches the emulator's dispatch like any op (c10d ops are dispatcher
ops); it runs on their host data, where this backend (gloo underneath) does the communication,
in place. DDP, FSDP2, DTensor and DeviceMesh sit on top unchanged.
"""

from __future__ import annotations

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


def install_fsdp_patch() -> None:
    from neuron_emulator import _hooks

    _hooks.after_import(FSDP_PARAM, _fsdp_storage_patch)
