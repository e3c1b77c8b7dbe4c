"""Scripts run INSIDE the target interpreter: stdlib (+ torch for smoke) only, JSON back."""

import re
from pathlib import Path

MARKER = "@@NEURON_ENV_JSON@@"
STEP = re.compile(r"@@STEP (\w+)@@")  # `@@STEP name@@` on stderr: the step now running


def script(name: str) -> Path:
    return Path(__file__).with_name(name)
