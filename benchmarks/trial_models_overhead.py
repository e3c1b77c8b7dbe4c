"""`neuron-env trial` on a tiny GPT-2 and a small ResNet (benchmarks/_trial_models.py) against a
hand-written script doing the same work in the same target: load the MODEL, a CPU float32
reference forward+backward, the device forward+backward, outputs/loss/every gradient compared
with torch.allclose, 10 synchronised steady-state runs, the fallback ops read.

    python benchmarks/trial_models_overhead.py --python TARGET [--device neuron] [--runs 5]

TARGET needs transformers for the GPT-2 (pip install transformers; it pulls no torch).
Medians of RUNS runs (after one warm-up run each); the target is <= 1.15x.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _overhead import compare

MODELS = Path(__file__).with_name("_trial_models.py")
BARE = """
import copy, importlib.util, statistics, time, torch
spec = importlib.util.spec_from_file_location("m", @PATH@)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
d = torch.device({device!r})
torch.manual_seed(0)
model, inputs = getattr(mod, @NAME@)()
def call(m, dev):
    if isinstance(inputs, dict):
        return m(**{{k: v.to(dev) for k, v in inputs.items()}})
    return m(*(x.to(dev) for x in inputs))
def floats(out):
    if isinstance(out, torch.Tensor):
        return [out]
    vals = out.values() if isinstance(out, dict) else out if isinstance(out, (list, tuple)) else []
    return [t for v in vals for t in floats(v) if t.is_floating_point()]
def step(m, dev):
    m.zero_grad(set_to_none=True)
    out = floats(call(m, dev))
    loss = sum(t.float().square().mean() for t in out)
    loss.backward()
    return out, loss
def sync():
    mod_ = getattr(torch, d.type, None)
    if d.type != "cpu" and hasattr(mod_, "synchronize"):
        mod_.synchronize()
api = None
if d.type == "neuron":
    try:
        import torch_neuronx as api
    except ImportError:
        import neuron_emulator as api
    (getattr(api, "clear_op_tracking", None) or api.clear_fallback_ops)()
ref = copy.deepcopy(model)
rout, rloss = step(ref, "cpu")
dev = copy.deepcopy(model).to(d)
out, loss = step(dev, d)
sync()
ok = all(torch.allclose(a.cpu().float(), b.float(), rtol=1e-3, atol=1e-5)
         for a, b in zip(out + [loss], rout + [rloss]))
ok &= all(torch.allclose(p.grad.cpu(), q.grad, rtol=1e-3, atol=1e-5)
          for p, q in zip(dev.parameters(), ref.parameters()) if q.grad is not None)
fallback = api.get_fallback_ops() if api else []
ts = []
for _ in range(10):
    t0 = time.perf_counter(); step(dev, d); sync(); ts.append(time.perf_counter() - t0)
print(ok, statistics.median(ts), fallback)
"""


def main(models: tuple[str, ...] = ("gpt2", "resnet")) -> None:
    for name in models:
        print(f"-- {name}")
        compare(BARE.replace("@PATH@", repr(str(MODELS))).replace("@NAME@", repr(name)),
                ["trial", f"{MODELS}:{name}", "--iterations", "10"], f"{name} trial")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
