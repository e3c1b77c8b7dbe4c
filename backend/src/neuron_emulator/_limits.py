"""Limitations of the TorchNeuron beta, reproduced: what the device does not run must not run
silently on the emulator either.

- float64: the device computes it as float32 and warns (once); the emulator keeps the float64
  dtype but rounds every float64 result through float32, and warns once.
- sparse tensors, nested tensors, quantized operators and `torch.func` transforms on device
  tensors are not supported in the beta: a RuntimeError naming the limitation (a quantized op
  is refused, never run on the CPU behind the device's back).
"""

from __future__ import annotations

import warnings

import torch

from neuron_emulator._errors import NeuronBetaLimitationError, NeuronFloat64Warning

DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/"
_warned: set[str] = set()
_checked: dict = {}


def _unsupported(what: str) -> None:
    raise NeuronBetaLimitationError(
        f"neuron (emulated): {what} is not supported on the neuron device in the TorchNeuron "
        f"beta (a documented limitation: {DOCS}); keep this part on the CPU")


QUANTIZED = "quantized operators (torch.ao.quantization: quantized tensors and kernels)"


def check_layout(t: torch.Tensor) -> None:
    if t.is_quantized:
        _unsupported(QUANTIZED)
    if t.layout != torch.strided:
        kind = "torch.nested" if t.is_nested else "torch.sparse"
        _unsupported(f"{kind} ({t.layout})")


def refuse_quantized(op, *args, **kwargs):
    """Boxed fallback of the device's quantized dispatch key (a quantized tensor moved to the
    device, a quantized factory on it)."""
    _unsupported(QUANTIZED)


_QUANTIZED_OPS = ("quantize_per_tensor", "quantize_per_channel", "quantize_per_tensor_dynamic",
                  "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor")


def _kind(func) -> str | None:
    name = func.overloadpacket.__name__
    if func.namespace == "quantized" or name in _QUANTIZED_OPS or name.startswith("quantized_"):
        return QUANTIZED
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


def round_float64(x: torch.Tensor) -> None:
    """In place: float64 device data written by a copy is rounded through float32."""
    if x.dtype is torch.float64:
        x.copy_(as_device_dtype(x))


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


_TRANSFORMS = ("vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
               "linearize", "functionalize")


def _on_device(tree) -> bool:
    from torch.utils._pytree import tree_leaves

    return any(isinstance(x, torch.Tensor) and x.device.type == "neuron"
               for x in tree_leaves(tree))


def _guard_transform(name: str, transform):
    def wrapped(func, *targs, **tkwargs):
        inner = transform(func, *targs, **tkwargs)

        def run(*args, **kwargs):
            if _on_device((args, kwargs)):
                _unsupported(f"torch.func.{name} (a torch.func transform) on neuron tensors")
            return inner(*args, **kwargs)
        return run
    wrapped.__name__ = name
    wrapped.__doc__ = transform.__doc__
    return wrapped


def install_transform_guards() -> None:
    """torch.func transforms refuse neuron tensors, as the beta does not support them. (The
    device dispatch cannot see a transform in flight, so the transforms themselves check.)"""
    import torch.func

    for name in _TRANSFORMS:
        original = getattr(torch.func, name, None)
        if original is not None:
            setattr(torch.func, name, _guard_transform(name, original))
    torch.vmap = torch.func.vmap




def install_backward_message() -> None:
    """Backward through every device index. torch 2.13's Python device guard tells the autograd
    engine there is one device, so the engine has one device worker queue and asserts on a
    neuron:1+ node; with autograd multithreading off, every node runs on the calling thread's
    CPU ready queue (all emulated work is CPU work anyway), whatever its device index."""
    import torch.autograd
    import torch.autograd.graph as graph

    original = graph._engine_run_backward
    single_thread = torch.autograd.set_multithreading_enabled

    def run(*args, **kwargs):
        with single_thread(False):
            return original(*args, **kwargs)
    graph._engine_run_backward = run
    torch.autograd._engine_run_backward = run  # imported there by name


def install_storage_guard() -> None:
    """`storage.neuron()` would allocate a device storage, which a Python backend has no
    allocator for (PyTorch would crash): say so. A device tensor's storage stays `is_neuron`."""

    def neuron(self, device=None, non_blocking=False, **kwargs):
        if self.device.type == "neuron":
            return self
        raise NeuronBetaLimitationError(
            "neuron (emulated): moving a storage to the device (storage.neuron()) needs a device "
            "allocator, which the emulator (pure Python) does not have; move the tensor instead "
            "(tensor.to('neuron'))")

    for cls in (torch.UntypedStorage, torch.TypedStorage):
        cls.neuron = neuron
