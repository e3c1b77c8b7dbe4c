"""Limitations of the TorchNeuron beta, reproduced: what the device does not run must not run
silently on the emulator either.

- float64: the device computes it as float32 and warns (once); the emulator keeps the float64
  dtype but rounds every float64 result through float32, and warns once.
- sparse tensors, nested tensors and `torch.func` transforms on device tensors are not supported
  in the beta: a RuntimeError naming the limitation.
"""

from __future__ import annotations

import warnings

import torch

DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/"
_warned: set[str] = set()
_checked: dict = {}
_functorch_active = torch._C._are_functorch_transforms_active


class NeuronBetaLimitationError(RuntimeError):
    """Something the TorchNeuron beta does not support was asked of the (emulated) device."""


class NeuronFloat64Warning(UserWarning):
    """float64 on the neuron device runs as float32."""


def _unsupported(what: str) -> None:
    raise NeuronBetaLimitationError(
        f"neuron (emulated): {what} is not supported on the neuron device in the TorchNeuron "
        f"beta (a documented limitation: {DOCS}); keep this part on the CPU")


def check_layout(t: torch.Tensor) -> None:
    if t.layout != torch.strided:
        kind = "torch.nested" if t.is_nested else "torch.sparse"
        _unsupported(f"{kind} ({t.layout})")


def _kind(func) -> str | None:
    name = func.overloadpacket.__name__
    if "sparse" in name or "coalesce" in name:
        return "torch.sparse"
    if "nested" in name or "jagged" in name:
        return "torch.nested"
    return None


def check_op(func) -> None:
    kind = _checked.get(func, False)
    if kind is False:
        kind = _checked[func] = _kind(func)
    if kind is not None:
        _unsupported(kind)
    if _functorch_active():
        _unsupported("a torch.func transform (vmap, grad, jacrev, …)")


def as_device_dtype(x: torch.Tensor) -> torch.Tensor:
    """float64 device data is rounded through float32, as the device computes it."""
    if x.dtype is not torch.float64:
        return x
    if "float64" not in _warned:
        _warned.add("float64")
        warnings.warn("neuron (emulated): float64 is not supported on the neuron device; it is "
                      "computed as float32 (precision is lost)", NeuronFloat64Warning,
                      stacklevel=5)
    return x.float().double() if x.numel() else x
