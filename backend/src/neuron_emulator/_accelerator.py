"""torch.accelerator for the emulated device.

A Python backend cannot give PyTorch's C++ side a device guard that switches devices, streams or
an allocator to read, so the torch.accelerator functions that need them are wrapped: when the
current accelerator is `neuron` they answer from the emulator (device index, streams, memory);
otherwise torch's own function runs.
"""

from __future__ import annotations

import functools

import torch

from neuron_emulator import _devices, _streams

# Is the current accelerator `neuron`? Fixed once the backend is registered, so read once, in
# install(): Dynamo itself calls torch.accelerator.current_stream() while it traces, and the C
# getter returns a torch.device, which Dynamo cannot trace (a graph break in every compiled
# model, on the CPU too); a plain bool it reads as a constant.
_ACCELERATOR = {"neuron": False}


def _on_neuron() -> bool:
    return _ACCELERATOR["neuron"]


def _wrap(module, name: str, replacement) -> None:
    original = getattr(module, name, None)
    if original is None:
        return

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        if _on_neuron():
            return replacement(*args, **kwargs)
        return original(*args, **kwargs)

    setattr(module, name, wrapped)


class _DeviceIndex(_devices.device):
    """torch.accelerator.device_index(i): `neuron:i` current inside the block."""


def _synchronize(device=None, /) -> None:
    """Every emulated op is synchronous: check the index, return None (as torch does)."""
    _devices.index_of(device)


def install(mod) -> None:
    """Wrap torch.accelerator (and torch.accelerator.memory) functions; `mod` is torch.neuron."""
    current = torch._C._accelerator_getAccelerator()
    _ACCELERATOR["neuron"] = current is not None and current.type == "neuron"
    acc = torch.accelerator
    plain = {
        "synchronize": _synchronize,
        "get_device_capability": mod.get_device_capability,
        "current_device_index": _devices.current,
        "current_device_idx": _devices.current,
        "set_device_index": _devices.set_current,
        "set_device_idx": _devices.set_current,
        "current_stream": _streams.current_stream,
        "set_stream": _streams.set_stream,
        "empty_cache": mod.empty_cache,
        "memory_stats": mod.memory_stats,
        "memory_allocated": mod.memory_allocated,
        "max_memory_allocated": mod.max_memory_allocated,
        "memory_reserved": mod.memory_reserved,
        "max_memory_reserved": mod.max_memory_reserved,
        "reset_accumulated_memory_stats": mod.reset_accumulated_memory_stats,
        "reset_peak_memory_stats": mod.reset_peak_memory_stats,
        "get_memory_info": mod.mem_get_info,
    }
    memory = getattr(acc, "memory", None)
    for name, fn in plain.items():
        _wrap(acc, name, fn)
        if memory is not None and hasattr(memory, name):
            _wrap(memory, name, fn)
    original = acc.device_index

    def device_index(device, /):
        return _DeviceIndex(device) if _on_neuron() else original(device)

    acc.device_index = device_index
