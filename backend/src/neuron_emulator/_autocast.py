"""torch.autocast("neuron", dtype=torch.bfloat16): PyTorch's CPU autocast policy, as data.

`autocast_policy.json` (beside this file) lists, with its source, the ops PyTorch's CPU
autocast runs in the lower-precision dtype, in float32, or at the widest input type
(aten/src/ATen/autocast_mode.cpp). The kernels follow autocast_mode.h's rules: only floating
tensors are cast, never float64 ones. Every other op falls through.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

POLICY_FILE = Path(__file__).with_name("autocast_policy.json")
_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_FP = (torch.float16, torch.bfloat16, torch.float32)


def load_policy() -> dict:
    return json.loads(POLICY_FILE.read_text(encoding="utf-8"))


def _eligible(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype in _FP


def _cast_all(args, kwargs, dt):
    def cast(t):
        if _eligible(t) and t.dtype != dt:
            return t.to(dt)
        if isinstance(t, (list, tuple)):
            return type(t)(cast(x) for x in t)
        return t
    return [cast(a) for a in args], {k: cast(v) for k, v in kwargs.items()}


def _widest(args, kwargs):
    dt = None
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if _eligible(t):
                dt = t.dtype if dt is None else torch.promote_types(dt, t.dtype)
    return dt


def _kernel(op, policy: str):
    def run(*args, **kwargs):
        if policy == "lower_precision_fp":
            dt = torch.get_autocast_dtype("neuron")
        elif policy == "fp32":
            dt = torch.float32
        else:
            dt = _widest(args, kwargs)
        if dt is not None:
            args, kwargs = _cast_all(args, kwargs, dt)
        with torch._C._ExcludeDispatchKeyGuard(_KEY):
            return op(*args, **kwargs)
    return run


def _overload(name: str):
    packet_name, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, packet_name, None)
    if packet is None or (overload or "default") not in packet.overloads():
        return None
    return getattr(packet, overload or "default")


def register(libs: list) -> None:
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    lib = torch.library.Library("aten", "IMPL")
    policy = load_policy()
    for kind in ("lower_precision_fp", "fp32", "promote"):
        for name in policy[kind]:
            op = _overload(name)
            if op is not None:
                lib.impl(name, _kernel(op, kind), "AutocastPrivateUse1")
    libs += [fallthrough, lib]
