"""`neuron-env trial builtin:mlp --world-size 2` wall time against a hand-written DDP check
doing the same work in the same target.

    python benchmarks/trial_distributed_overhead.py --python TARGET [--device neuron] [--runs 3]

Both: the same MLP (seed 0, batch 32, cross-entropy), ONE process on the whole batch first (the
reference: a rank-free run, so a rank-dependent model cannot fool it; one SGD step saved, then
one rank's per-rank-batch steady state timed), then 2 DDP ranks (gloo on the CPU, the `neuron`
backend on the device) on a free loopback port, each comparing its shard's output, the
all-reduced loss and every parameter after the step with the reference, then 10 synchronised
steady-state steps; every process gets one rank's share of the cores (OMP_NUM_THREADS), as
neuron-env and torchrun give. Medians of RUNS runs (after one warm-up run each).
"""

from __future__ import annotations

from _overhead import compare

# the hand-written check: a driver (run as `python -c`) that writes and runs two scripts
REF = r'''
import sys, time, torch
from torch import nn
d = torch.device(sys.argv[2])
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10))
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
init = dict((n, p.detach().clone()) for n, p in model.named_parameters())
model.to(d)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
out = model(x.to(d)); loss = nn.functional.cross_entropy(out, y.to(d)); loss.backward()
opt.step(); opt.zero_grad()
final = dict((n, p.detach().cpu().clone()) for n, p in model.named_parameters())
torch.save(dict(init=init, out=out.detach().cpu(), loss=float(loss), final=final), sys.argv[1])
ts = []
for _ in range(11):
    t0 = time.perf_counter()
    o = model(x[:16].to(d)); nn.functional.cross_entropy(o, y[:16].to(d)).backward()
    opt.step(); opt.zero_grad(); o.sum().item(); ts.append(time.perf_counter() - t0)
'''

RANK = r'''
import os, sys, time, torch, torch.distributed as dist
from torch import nn
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dev = sys.argv[2]
d = torch.device("cpu") if dev == "cpu" else torch.device(dev, 0)
dist.init_process_group("gloo" if dev == "cpu" else dev, rank=rank, world_size=world)
ref = torch.load(sys.argv[1], weights_only=False)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10))
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
for n, p in model.named_parameters():
    assert torch.equal(p, ref["init"][n]), n
sl = slice(rank * 16, rank * 16 + 16)
ddp = nn.parallel.DistributedDataParallel(model.to(d))
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
xs, ys = x[sl].to(d), y[sl].to(d)
out = ddp(xs); loss = nn.functional.cross_entropy(out, ys); loss.backward()
opt.step(); opt.zero_grad()
assert torch.allclose(out.detach().cpu(), ref["out"][sl], rtol=1e-4, atol=1e-5)
g = loss.detach().reshape(1).clone(); dist.all_reduce(g)
assert torch.allclose(g.cpu() / world, torch.tensor([ref["loss"]]), rtol=1e-4, atol=1e-5)
for n, p in model.named_parameters():
    assert torch.allclose(p.detach().cpu(), ref["final"][n], rtol=1e-4, atol=1e-5), n
ts = []
for _ in range(11):
    t0 = time.perf_counter()
    o = ddp(xs); nn.functional.cross_entropy(o, ys).backward(); opt.step(); opt.zero_grad()
    o.sum().item(); ts.append(time.perf_counter() - t0)
dist.barrier(); dist.destroy_process_group()
'''

BARE = ("import os, socket, subprocess, sys, tempfile\n"
        "REF = " + repr(REF).replace("{", "{{").replace("}", "}}") + "\n"
        "RANK = " + repr(RANK).replace("{", "{{").replace("}", "}}") + "\n"
        "dev = {device!r}\n" + r'''
tmp = tempfile.mkdtemp()
threads = str(max(1, (os.cpu_count() or 1) // 2))  # one rank's share, as torchrun gives
os.environ.setdefault("OMP_NUM_THREADS", threads)
open(os.path.join(tmp, "ref.py"), "w").write(REF)
open(os.path.join(tmp, "rank.py"), "w").write(RANK)
refpt = os.path.join(tmp, "ref.pt")
subprocess.run([sys.executable, os.path.join(tmp, "ref.py"), refpt, dev], check=True,
               timeout=600)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
procs = [subprocess.Popen([sys.executable, os.path.join(tmp, "rank.py"), refpt, dev],
                          env=dict(os.environ, RANK=str(r), WORLD_SIZE="2",
                                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
         for r in range(2)]
assert all(p.wait(timeout=600) == 0 for p in procs)
''')


def main() -> None:
    compare(BARE, ["trial", "builtin:mlp", "--world-size", "2", "--iterations", "10"],
            "DDP check")


if __name__ == "__main__":
    main()
