"""torch.autocast("neuron", dtype=torch.bfloat16): PyTorch's generic autocast policy, as data.

`autocast_policy.json` (beside this file) lists, with its source, the ops PyTorch's generic
(CUDA-style) autocast runs in the lower-precision dtype, in float32 (also by setting their
optional dtype), or at the widest input type, and the op it refuses (binary_cross_entropy),
from aten/src/ATen/autocast_mode.h/.cpp. The kernels follow autocast_mode.h's rules: only
floating tensors are cast, never float64 ones. Every other op falls through.
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


def _set_opt_dtype(op):
    """fp32_set_opt_dtype: an eligible first argument runs with dtype=float32 unless the caller
    gave a dtype."""
    pos = next(i for i, a in enumerate(op._schema.arguments) if a.name == "dtype")

    def run(*args, **kwargs):
        if _eligible(args[0]):
            if len(args) > pos:
                if args[pos] is None:
                    args = (*args[:pos], torch.float32, *args[pos + 1:])
            elif kwargs.get("dtype") is None:
                kwargs = dict(kwargs, dtype=torch.float32)
        with torch._C._ExcludeDispatchKeyGuard(_KEY):
            return op(*args, **kwargs)
    return run


def _banned(message: str):
    def run(*args, **kwargs):
        raise RuntimeError(message)
    return run


def _kernel(op, policy: str):
    if policy == "fp32_set_opt_dtype":
        return _set_opt_dtype(op)

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
    for kind in ("lower_precision_fp", "fp32", "fp32_set_opt_dtype", "promote"):
        for name in policy[kind]:
            op = _overload(name)
            if op is not None:
                lib.impl(name, _kernel(op, kind), "AutocastPrivateUse1")
    for name, message in policy.get("banned", {}).items():
        if _overload(name) is not None:
            lib.impl(name, _banned(message), "AutocastPrivateUse1")
    libs += [fallthrough, lib]
