"""Scripts run INSIDE the target interpreter: stdlib (+ torch for smoke) only, JSON back."""

import re
from pathlib import Path

from neuron_env.inside._shared import MARKER  # noqa: F401 (the runners' side of the marker)

STEP = re.compile(r"@@STEP (\w+)@@")  # on stderr (_shared.step): the step running now


def script(name: str) -> Path:
    return Path(__file__).with_name(name)
