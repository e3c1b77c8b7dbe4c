"""Whether the emulated backend is registered: the state `_register.load()` writes and the
layers below it read (`_compile` asks it; it once imported `_register` for that, which imports
`_compile` back through `_autoselect`/`_device_module`: a circle). No torch import."""

from __future__ import annotations

import threading

lock = threading.RLock()
state = {"loaded": False, "loading": False, "reason": "not loaded yet"}


def is_loaded() -> bool:
    return state["loaded"]
