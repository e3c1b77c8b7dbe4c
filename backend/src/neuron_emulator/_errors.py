"""The emulator's exception and warning classes (no torch import: safe to import first)."""


class NeuronBetaLimitationError(RuntimeError):
    """Something the TorchNeuron beta does not support was asked of the (emulated) device."""


class NeuronFloat64Warning(UserWarning):
    """float64 on the neuron device runs as float32."""
