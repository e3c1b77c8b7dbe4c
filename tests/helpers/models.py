"""The real model libraries (transformers, timm) in the torch venv: skip, saying why, when one
does not import there."""

from __future__ import annotations

import pytest


def need_lib(models_python, name: str) -> str:
    """The interpreter, or a skip that says why `name` does not import there."""
    py, libs = models_python
    got = libs.get(name, {})
    if "version" not in got:
        pytest.skip(f"{name} does not import in the torch venv: {got.get('error', 'absent')}")
    return py
