"""Scripts run INSIDE the target interpreter: stdlib (+ torch for smoke) only, JSON back.
They are started, and their protocol read, by neuron_env/target_python/ (its docstring: the
spec)."""

from pathlib import Path

from neuron_env.inside._shared import MARKER  # noqa: F401 (the host side: neuron_env/target_python/)


def script(name: str) -> Path:
    return Path(__file__).with_name(name)
