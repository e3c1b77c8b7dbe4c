"""torch.autocast("neuron", dtype=torch.bfloat16): matmul-like ops run in the autocast dtype.

PyTorch registers no kernels for AutocastPrivateUse1; every other op falls through.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_map

LOWER_PRECISION_OPS = ("mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "matmul", "linear",
                       "dot", "conv1d", "conv2d", "conv3d", "_convolution", "prelu",
                       "addbmm", "chain_matmul", "linalg_vecdot")
_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)


def _kernel(op):
    def run(*args, **kwargs):
        dt = torch.get_autocast_dtype("neuron")

        def cast(t):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != dt:
                return t.to(dt)
            return t

        with torch._C._ExcludeDispatchKeyGuard(_KEY):
            return op(*tree_map(cast, args), **tree_map(cast, kwargs))
    return run


def register(libs: list) -> None:
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    lib = torch.library.Library("aten", "IMPL")
    for name in LOWER_PRECISION_OPS:
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            if "out" in overload:
                continue
            lib.impl(f"{name}.{overload}" if overload != "default" else name,
                     _kernel(getattr(packet, overload)), "AutocastPrivateUse1")
    libs += [fallthrough, lib]
