"""Device kernels the CPU lacks: where the device computes what the host's CPU kernel refuses.

The emulator computes every op with the CPU's kernels; a few of them refuse inputs that the
device (and CUDA) accept, and a model that passes on the device must not fail here.

- `histc` on integer tensors: the CPU has no integer kernel ("histogram_cpu" not implemented for
  'Int'); CUDA's and the device's do, returning the input's dtype. transformers' MoE routing
  (Mixtral, Qwen2-MoE, Qwen3-MoE) calls it with an int tensor on every non-CPU device.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _histc(x: torch.Tensor, bins: int = 100, min: float = 0, max: float = 0,
           *, out: torch.Tensor | None = None) -> torch.Tensor:
    if x.is_floating_point():
        r = aten.histc.default(x, bins, min, max)
    else:  # counts are exact in float64 up to 2**53 elements
        r = aten.histc.default(x.to(torch.float64), bins, min, max).to(x.dtype)
    if out is None:
        return r
    out.resize_(r.shape)
    return out.copy_(r)


# OpOverload -> the host function that computes it (same signature)
HOST = {aten.histc.default: _histc, aten.histc.out: _histc}
