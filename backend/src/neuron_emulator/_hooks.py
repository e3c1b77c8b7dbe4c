"""Run a patch on a torch module right after torch imports it (only if it ever does), so that
loading the emulator does not import heavy parts of torch (dynamo, FSDP)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable

_patches: dict[str, Callable] = {}


class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        patch = _patches.get(fullname)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module)
        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def after_import(name: str, patch: Callable) -> None:
    """patch(module) now if `name` is imported, else right after its import."""
    if name in sys.modules:
        patch(sys.modules[name])
        return
    _patches[name] = patch
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
