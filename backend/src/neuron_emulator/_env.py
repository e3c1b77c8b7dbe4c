"""Boolean environment variables as the env-vars page types them
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html), and
warn-once. No torch import and no sibling import: the bottom of the emulator, read by
`_compile` and `_artifacts` alike (it lived in `_compile`, which `_artifacts` then imported
back: a circle)."""

from __future__ import annotations

import os
import warnings

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def env_flag(name: str, default: bool) -> bool:
    """A boolean environment variable as the env-vars page types it ("1"/"0", true/false); unset
    or empty is the default; another value warns once and is the default."""
    raw = os.environ.get(name, "").strip().lower()
    if raw in _TRUE or raw in _FALSE:
        return raw in _TRUE
    if raw:
        warn_once(f"{name}={raw}", f"neuron (emulated): {name}={raw!r} is not a boolean "
                  f"(1/0, true/false); using the default ({int(default)})")
    return default
