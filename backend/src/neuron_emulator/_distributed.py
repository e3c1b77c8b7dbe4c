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
