"""The emulator's version, declared once: the wheel (`backend/pyproject.toml`, and neuron-env's
own builder, `neuron_env/install/emulator_wheel.py`) reads it here, the package re-exports it,
and `_neuronx` reads it without importing the package root (which would close a circle)."""

__version__ = "0.1.0"
