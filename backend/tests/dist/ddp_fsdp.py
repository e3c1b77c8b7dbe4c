"""Run under torchrun (2 ranks) with the emulated backend: `python -m torch.distributed.run
--nproc-per-node 2 ddp_fsdp.py ddp|fsdp2|collectives`. Prints RANK<r> OK <what> on success."""

import os
import sys

import torch
import torch.distributed as dist


def collectives(rank, world):
    dev = torch.device("neuron", 0)  # each rank: its own device, as in the AWS guide
    t = torch.full((4,), float(rank + 1), device=dev)
    dist.all_reduce(t)
    assert t.device == dev and t.cpu().tolist() == [3.0] * 4, t
    out = [torch.empty(2, device=dev) for _ in range(world)]
    dist.all_gather(out, torch.full((2,), float(rank), device=dev))
    assert [o.cpu().tolist() for o in out] == [[0.0, 0.0], [1.0, 1.0]]
    big = torch.empty(2 * world, device=dev)
    dist.all_gather_into_tensor(big, torch.full((2,), float(rank), device=dev))
    assert big.cpu().tolist() == [0.0, 0.0, 1.0, 1.0]
    rs = torch.empty(2, device=dev)
    dist.reduce_scatter_tensor(rs, torch.arange(4.0, device=dev))
    assert rs.cpu().tolist() == ([0.0, 2.0] if rank == 0 else [4.0, 6.0]), rs
    b = torch.full((3,), float(rank), device=dev)
    dist.broadcast(b, src=1)
    assert b.cpu().tolist() == [1.0] * 3
    if rank == 0:
        dist.send(torch.tensor([42.0], device=dev), dst=1)
    else:
        r = torch.zeros(1, device=dev)
        dist.recv(r, src=0)
        assert r.cpu().tolist() == [42.0]
    dist.barrier()


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def train(m, rank, steps=3):
    dev = torch.device("neuron", 0)  # each rank: its own device, as in the AWS guide
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    torch.manual_seed(100 + rank)
    for _ in range(steps):
        x, y = torch.randn(4, 8, device=dev), torch.randn(4, 4, device=dev)
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()


def ddp(rank, world):
    from torch.nn.parallel import DistributedDataParallel as DDP

    dev = torch.device("neuron", 0)  # each rank: its own device, as in the AWS guide
    m = DDP(model().to(dev))
    train(m, rank)
    w = m.module[0].weight.detach().clone()
    ws = [torch.empty_like(w) for _ in range(world)]
    dist.all_gather(ws, w)
    assert torch.equal(ws[0].cpu(), ws[1].cpu()), "DDP replicas diverged"
    assert w.device == dev


def fsdp2(rank, world):
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    dev = torch.device("neuron", 0)  # each rank: its own device, as in the AWS guide
    m = model().to(dev)
    for layer in m:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(m)
    p = m[0].weight
    assert isinstance(p, DTensor) and p.to_local().device == dev, (type(p), p.device)
    train(m, rank)
    full = p.full_tensor()
    assert full.shape == (16, 8) and full.device == dev


def main():
    what = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group(backend="neuron")
    {"collectives": collectives, "ddp": ddp, "fsdp2": fsdp2}[what](rank, world)
    dist.destroy_process_group()
    print(f"RANK{rank} OK {what}", flush=True)


if __name__ == "__main__":
    main()
