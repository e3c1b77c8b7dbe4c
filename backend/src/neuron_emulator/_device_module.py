"""`torch.neuron`: the device module of the emulated backend (the functions the TorchNeuron
reference lists for `torch.neuron`, plus `is_emulated`)."""

from __future__ import annotations

import torch

from neuron_emulator import _devices, _fallback, _memory, _rng, _streams


class DeviceProperties:
    """What get_device_properties() returns: a logical NeuronCore of a Trainium2 (emulated)."""

    def __init__(self, index: int) -> None:
        self.name = "Trainium2 logical NeuronCore (emulated on CPU)"
        self.index = index
        self.total_memory = _memory.MEMORY_BYTES
        self.type = "neuron"
        self.emulated = True

    def __repr__(self) -> str:
        return (f"_NeuronDeviceProperties(name='{self.name}', index={self.index}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, emulated=True)")


def _idx(device) -> int:
    return _devices.index_of(device)


def _dynamo(name: str):
    def call(*args, **kwargs):
        from neuron_emulator import _compile  # imports torch._dynamo: only when asked

        return getattr(_compile, name)(*args, **kwargs)
    call.__name__ = name
    return call


class NeuronModule:
    """What PyTorch expects of a backend module, plus the emulator's own calls."""

    Stream = _streams.Stream
    Event = _streams.Event
    stream = _streams.stream
    device = _devices.device
    current_stream = staticmethod(_streams.current_stream)
    default_stream = staticmethod(_streams.default_stream)
    set_stream = staticmethod(_streams.set_stream)

    manual_seed = staticmethod(_rng.manual_seed)
    manual_seed_all = staticmethod(_rng.manual_seed_all)
    seed = staticmethod(_rng.seed)
    seed_all = staticmethod(_rng.seed_all)
    initial_seed = staticmethod(_rng.initial_seed)
    get_rng_state = staticmethod(_rng.get_rng_state)
    set_rng_state = staticmethod(_rng.set_rng_state)
    get_rng_state_all = staticmethod(_rng.get_rng_state_all)
    set_rng_state_all = staticmethod(_rng.set_rng_state_all)

    get_fallback_ops = staticmethod(_fallback.get_fallback_ops)
    get_fallback_counts = staticmethod(_fallback.get_fallback_counts)
    clear_fallback_ops = staticmethod(_fallback.clear_fallback_ops)
    get_executed_ops = staticmethod(_fallback.get_executed_ops)
    get_dynamo_metrics = staticmethod(_dynamo("get_dynamo_metrics"))
    reset_dynamo_metrics = staticmethod(_dynamo("reset_dynamo_metrics"))

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def device_count(self) -> int:
        return _devices.COUNT

    def current_device(self) -> int:
        return _devices.current()

    def set_device(self, device) -> None:
        _devices.set_current(device)

    def synchronize(self, device=None) -> None:
        """Every emulated op is synchronous."""
        _idx(device)

    def get_amp_supported_dtype(self):
        return [torch.bfloat16, torch.float16]

    def get_device_capability(self, device=None) -> dict:
        """As torch.accelerator.get_device_capability: {"supported_dtypes": [...]}. The beta
        computes float64 as float32 (with a warning); complex dtypes are not listed."""
        _idx(device)
        return {"supported_dtypes": [
            torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
            torch.float16, torch.bfloat16, torch.float32, torch.float64]}

    def is_bf16_supported(self) -> bool:
        return True

    def is_emulated(self) -> bool:
        return True

    def get_device_name(self, device=None) -> str:
        return DeviceProperties(_idx(device)).name

    def get_device_properties(self, device=None) -> DeviceProperties:
        return DeviceProperties(_idx(device))

    # memory: live bytes of device tensors; reserved also holds freed bytes until empty_cache()
    def memory_allocated(self, device=None) -> int:
        return _memory.allocated(_idx(device))

    def max_memory_allocated(self, device=None) -> int:
        return _memory.peak(_idx(device))

    def memory_reserved(self, device=None) -> int:
        return _memory.reserved(_idx(device))

    def max_memory_reserved(self, device=None) -> int:
        return _memory.reserved_peak(_idx(device))

    def memory_stats(self, device=None) -> dict:
        return _memory.stats(_idx(device))

    def reset_peak_memory_stats(self, device=None) -> None:
        _memory.reset_peak(_idx(device))

    def reset_accumulated_memory_stats(self, device=None) -> None:
        _memory.reset_accumulated(_idx(device))

    def empty_cache(self) -> None:
        """Return freed-but-reserved device memory (memory_reserved drops to allocated)."""
        _memory.empty_cache()

    def mem_get_info(self, device=None) -> tuple[int, int]:
        total = _memory.MEMORY_BYTES
        return total - _memory.reserved(_idx(device)), total
