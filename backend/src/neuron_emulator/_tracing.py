"""Ops that torch.compile traces are not ops the device executed.

Dynamo traces a frame by running it on fake tensors, which for the emulator's traceable wrapper
subclass means through the device dispatch: without this, a graph the backend then refused
(or never ran) would leave executed-op and fallback records. Dynamo wraps each frame's
compilation in `callback_handler.install_callbacks` (torch._dynamo.callback); recording is off
(`_fallback.quiet`) inside it. The method itself is wrapped (registered callbacks would not do:
torch._dynamo.reset() clears them), right after dynamo is first imported.
"""

from __future__ import annotations

import contextlib

from neuron_emulator import _fallback, _hooks

MODULE = "torch._dynamo.callback"


def _patch(module) -> None:
    cls = module.CompilationCallbackHandler
    if getattr(cls, "_neuron_quiet", False):
        return
    install_callbacks = cls.install_callbacks

    @contextlib.contextmanager
    def quiet_install_callbacks(self, *args, **kwargs):
        with _fallback.quiet(), install_callbacks(self, *args, **kwargs):
            yield
    cls.install_callbacks = quiet_install_callbacks
    cls._neuron_quiet = True


def install() -> None:
    _hooks.after_import(MODULE, _patch)
