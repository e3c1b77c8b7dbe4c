"""The basic collective of AWS's "How to use torch.distributed on Neuron" guide, unchanged
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html)."""
import os

import torch
import torch.distributed as dist
import torch_neuronx  # noqa: F401  # Registers the Neuron device and distributed backend.

rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])
dist.init_process_group(
    backend="neuron",
    init_method="env://",
    rank=rank,
    world_size=world_size,
)
try:
    process_group = dist.group.WORLD
    value = torch.tensor([float(rank + 1)], device=torch.device("neuron"))
    dist.all_reduce(value, op=dist.ReduceOp.SUM, group=process_group)
    print(
        f"rank={rank} local_rank={os.environ['LOCAL_RANK']} "
        f"world_size={world_size}: all_reduce={value.cpu().item()}",
        flush=True,
    )
finally:
    dist.destroy_process_group()
