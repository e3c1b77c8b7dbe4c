"""`import torch_neuronx` on the emulator: the op-tracking API user code calls, marked EMULATED.

It is served by a meta-path finder placed LAST on sys.meta_path, so any real `torch_neuronx` on
the path wins; nothing named torch_neuronx is installed. (The emulator does not load at all when
a real torch_neuronx is importable; see _register.py.)

    torch_neuronx.get_fallback_ops()   # ["aten::cumsum", ...]: one entry per op, not per call
    torch_neuronx.get_executed_ops()   # ["aten::add", "aten::mm", ...]: one entry per op
    torch_neuronx.clear_op_tracking()  # forget both
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

NAME = "torch_neuronx"


def _executed_names() -> list[str]:
    from neuron_emulator import _fallback

    return list(_fallback.get_executed_ops())


def _build(module: types.ModuleType) -> None:
    from neuron_emulator import _fallback
    from neuron_emulator._version import __version__

    module.__dict__.update(
        EMULATED=True,
        __version__=f"0.0.0+emulated.neuron-emulator.{__version__}",
        __doc__="EMULATED torch_neuronx (neuron-emulator): op tracking only; every op ran on "
                "the CPU. Not AWS's torch-neuronx.",
        get_fallback_ops=_fallback.get_fallback_ops,
        get_executed_ops=_executed_names,
        clear_op_tracking=_fallback.clear_fallback_ops,
    )


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        _build(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds `torch_neuronx` only when no finder before it did."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != NAME:
            return None
        return importlib.machinery.ModuleSpec(NAME, _Loader(), origin="neuron-emulator")


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
