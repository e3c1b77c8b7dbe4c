"""`torch.neuron`: the device module of the emulated backend."""

from __future__ import annotations

import torch

from neuron_emulator import _fallback


class NeuronModule:
    """What PyTorch expects of a backend module, plus the emulator's own calls."""

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device) -> None:
        idx = torch.device(device).index if not isinstance(device, int) else device
        if idx not in (None, 0):
            raise RuntimeError(f"neuron (emulated): invalid device index {idx}: 1 device")

    # Random ops run on the CPU generator, which torch.manual_seed already seeds (and which
    # calls manual_seed_all here: seeding it again would recurse).
    def manual_seed(self, seed: int) -> None:
        pass

    def manual_seed_all(self, seed: int) -> None:
        pass

    def get_rng_state(self, device="neuron"):
        return torch.get_rng_state()

    def set_rng_state(self, state, device="neuron") -> None:
        torch.set_rng_state(state)

    def synchronize(self, device=None) -> None:
        """Every emulated op is synchronous."""

    def get_amp_supported_dtype(self):
        return [torch.bfloat16, torch.float16]

    def is_bf16_supported(self) -> bool:
        return True

    def is_emulated(self) -> bool:
        return True

    def memory_allocated(self, device=None) -> int:
        raise NotImplementedError("neuron (emulated): no device allocator to report on; "
                                  "tensors live in host memory")

    get_fallback_ops = staticmethod(_fallback.get_fallback_ops)
    clear_fallback_ops = staticmethod(_fallback.clear_fallback_ops)
    get_executed_ops = staticmethod(_fallback.get_executed_ops)

    def get_device_name(self, device=None) -> str:
        return "Trainium (emulated on CPU)"
