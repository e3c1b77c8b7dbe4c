"""Scripts run INSIDE the target interpreter: stdlib (+ torch for smoke) only, JSON back."""

from pathlib import Path

MARKER = "@@NEURON_ENV_JSON@@"


def script(name: str) -> Path:
    return Path(__file__).with_name(name)
