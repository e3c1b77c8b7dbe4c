"""neuron-emulator: an EMULATED `neuron` device for PyTorch, backed by CPU memory.

It registers PyTorch's PrivateUse1 backend under the name `neuron`, the way AWS's torch-neuronx
(TorchNeuron, Neuron 2.33+) does, so code written for `.to("neuron")`, `torch.accelerator` and
`torch.neuron` runs on any machine. Every result it gives is computed on the CPU: it proves that
code *runs* on a `neuron` device, not how Trainium performs. It says so: `EMULATED` is True,
`torch.neuron.is_emulated()` returns True.

Loaded by PyTorch's device-backend autoload on `import torch` (TORCH_DEVICE_BACKEND_AUTOLOAD=0
turns that off; then `import neuron_emulator`). If a real torch_neuronx is importable, or another
PrivateUse1 backend is registered first, it leaves the device alone and says so.

Besides the device (N of them: NEURON_EMULATOR_DEVICES, NEURON_RT_VISIBLE_CORES) it provides the
dynamo backend "neuron", the process-group backend "neuron" (gloo on the host), an EMULATED
`torch_neuronx` op-tracking module, per-device RNG, memory accounting, synchronous streams and
events, and the beta's limitations (float64 as float32, no sparse/nested/torch.func). See
README.md for the fidelity table.
"""

from __future__ import annotations

EMULATED = True

from neuron_emulator._errors import (  # noqa: E402
    NeuronBetaLimitationError,
    NeuronFloat64Warning,
)
from neuron_emulator._fallback import (  # noqa: E402
    UNSUPPORTED_OPS,
    NeuronFallbackWarning,
    clear_fallback_ops,
    get_executed_ops,
    get_fallback_counts,
    get_fallback_ops,
)
from neuron_emulator._register import (  # noqa: E402
    NeuronEmulatorWarning,
    is_emulated,
    load,
    status,
)
from neuron_emulator._state import is_loaded  # noqa: E402
from neuron_emulator._version import __version__  # noqa: E402


def _autoload() -> None:
    """Entry point for PyTorch's `torch.backends` autoload: never raises into `import torch`."""
    load(from_autoload=True)


# Importing the module loads the backend too (the TORCH_DEVICE_BACKEND_AUTOLOAD=0 path); a
# refusal here is a warning, as under autoload. Call load() to get an ImportError instead.
load(from_autoload=True)


__all__ = [
    "EMULATED",
    "UNSUPPORTED_OPS",
    "NeuronBetaLimitationError",
    "NeuronEmulatorWarning",
    "NeuronFallbackWarning",
    "NeuronFloat64Warning",
    "__version__",
    "clear_fallback_ops",
    "get_executed_ops",
    "get_fallback_counts",
    "get_fallback_ops",
    "is_emulated",
    "is_loaded",
    "load",
    "status",
]
