"""`neuron-env trial builtin:mlp` wall time against a bare `python -c` doing the same reference
and device runs and comparisons in the same target.

    python benchmarks/trial_overhead.py --python TARGET [--device neuron] [--runs 5]

Both: the same MLP (seed 0), a CPU float32 reference forward+backward, the device
forward+backward, outputs/loss/every gradient compared, 10 synchronised steady-state runs, the
fallback ops read. Medians of RUNS runs (after one warm-up run each).
"""

from __future__ import annotations

from _overhead import compare

BARE = """
import copy, statistics, time, torch
from torch import nn
d = torch.device({device!r})
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10))
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
def step(m, xx):
    m.zero_grad(set_to_none=True)
    out = m(xx)
    loss = nn.functional.cross_entropy(out, y.to(out.device))
    loss.backward()
    return out, loss
def sync():
    mod = getattr(torch, d.type, None)
    if d.type != "cpu" and hasattr(mod, "synchronize"):
        mod.synchronize()
api = None
if d.type == "neuron":
    try:
        import torch_neuronx as api
    except ImportError:  # an emulator without the torch_neuronx shim
        import neuron_emulator as api
    (getattr(api, "clear_op_tracking", None) or api.clear_fallback_ops)()
ref = copy.deepcopy(model)
rout, rloss = step(ref, x)
dev = copy.deepcopy(model).to(d)
xd = x.to(d)
out, loss = step(dev, xd)
sync()
torch.testing.assert_close(out.cpu(), rout, rtol=1e-3, atol=1e-5)
torch.testing.assert_close(loss.cpu(), rloss, rtol=1e-3, atol=1e-5)
for p, q in zip(dev.parameters(), ref.parameters()):
    torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-3, atol=1e-5)
fallback = api.get_fallback_ops() if api else []
ts = []
for _ in range(10):
    t0 = time.perf_counter(); step(dev, xd); sync(); ts.append(time.perf_counter() - t0)
print(statistics.median(ts), fallback)
"""


def main() -> None:
    compare(BARE, ["trial", "builtin:mlp", "--iterations", "10"], "mlp trial")


if __name__ == "__main__":
    main()
