"""`torch.compile(model)` without `backend=` on neuron tensors compiles with the neuron backend.

AWS's torch.compile reference lists `backend` as "'neuron'. Explicitly set, or auto-selected when
running on a Neuron device"
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html).
torch.compile's default backend is inductor, which it wraps in `_TorchCompileInductorWrapper`;
that wrapper hands a graph whose inputs (parameters included) live on a neuron device to the
neuron backend, with the mode and options given to torch.compile. A graph of CPU tensors still
goes to inductor. Patched on load, without importing torch._dynamo.
"""

from __future__ import annotations

import torch

# options the neuron backend reads; inductor would refuse them as unknown
NEURON_OPTIONS = frozenset({"fallback_execution"})


def _on_device(inputs) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == "neuron" for t in inputs)


def install() -> None:
    wrapper = torch._TorchCompileInductorWrapper
    if getattr(wrapper, "_neuron_autoselect", False):
        return
    init, call = wrapper.__init__, wrapper.__call__

    def __init__(self, mode, options, dynamic, name=None):
        self._neuron_args = {"mode": mode, "options": dict(options or {})}
        inductor = {k: v for k, v in (options or {}).items() if k not in NEURON_OPTIONS}
        init(self, mode, inductor or None, dynamic, name)

    def __call__(self, model_, inputs_, **kwargs):
        if _on_device(inputs_):
            from neuron_emulator import _compile

            args = getattr(self, "_neuron_args", {})
            return _compile.neuron_backend(model_, inputs_, mode=args.get("mode"),
                                           options=args.get("options"))
        return call(self, model_, inputs_, **kwargs)

    wrapper.__init__, wrapper.__call__ = __init__, __call__
    wrapper._neuron_autoselect = True
