"""Register the emulated backend: the `neuron` rename, device module, hooks, kernels."""

from __future__ import annotations

import os
import warnings

from neuron_emulator._state import lock as _lock
from neuron_emulator._state import state as _state

_libs: list = []  # torch.library.Library objects must stay alive
SUPPORTED_TORCH = ((2, 13), (2, 14))


class NeuronEmulatorWarning(UserWarning):
    """The emulator did not load (another backend present, unsupported torch)."""


def status() -> dict:
    """What the emulator did: {"loaded": bool, "reason": str, "torch": version, "machine":
    {"instance_type", "from", "lnc", "logical_cores", "devices"} or None}."""
    import torch

    machine = None
    if _state["loaded"]:
        from neuron_emulator import _devices

        machine = dict(_devices.machine(), devices=_devices.COUNT)
    return {"loaded": _state["loaded"], "reason": _state["reason"], "torch": torch.__version__,
            "machine": machine}


def is_emulated() -> bool:
    return True


def _refuse(reason: str, from_autoload: bool) -> None:
    _state["reason"] = reason
    if from_autoload:
        warnings.warn(f"neuron-emulator not loaded: {reason}", NeuronEmulatorWarning,
                      stacklevel=3)
    else:
        raise ImportError(f"neuron-emulator cannot load: {reason}")


def load(from_autoload: bool = False) -> bool:
    """Register the emulated `neuron` device; True when it is (now) registered."""
    with _lock:
        if _state["loaded"]:
            return True
        if _state["loading"]:
            # `import neuron_emulator` before torch: loading imports torch, whose autoload
            # calls back in here; the outer call finishes the job
            return False
        _state["loading"] = True
        try:
            return _load(from_autoload)
        except Exception as e:  # autoload must never break `import torch`
            if not from_autoload and isinstance(e, ImportError):
                raise
            _refuse(f"{type(e).__name__}: {e}", from_autoload)
            return False
        finally:
            _state["loading"] = False


def _load(from_autoload: bool) -> bool:
    import torch

    from neuron_emulator import _faults

    why = _why_not(torch)
    if why:
        _refuse(why, from_autoload)
        return False
    _faults.on_load()
    module = _register_device(torch)
    _install(torch, module)
    _state.update(loaded=True, reason="loaded")
    return True


def _why_not(torch) -> str | None:
    """Why the emulator must not register here (an unsupported torch, a real torch-neuronx,
    another PrivateUse1 backend), or None."""
    ver = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if ver not in SUPPORTED_TORCH:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_TORCH)
        return (f"torch {torch.__version__} is not supported (it relies on private PrivateUse1 "
                f"APIs tested on torch {supported})")
    real = _real_torch_neuronx()
    if real:
        return (f"a real torch-neuronx is installed ({real}); it owns the neuron device, the "
                "emulator steps aside (uninstall neuron-emulator)")
    current = torch._C._get_privateuse1_backend_name()
    if current != "privateuseone":
        return (f"another PrivateUse1 backend is registered ('{current}'"
                + (", the real torch-neuronx?" if current == "neuron" else "")
                + "); leaving it alone")
    return None


def _register_device(torch):
    """The `neuron` rename, its device module and storage methods; returns the module."""
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    from neuron_emulator import _device_module

    module = _device_module.NeuronModule()
    _setup_privateuseone_for_python_backend("neuron", module, device_guard=_device_guard())
    # storages too: `.is_neuron` on a device tensor's (Typed/Untyped)Storage
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=False, for_module=False, for_packed_sequence=False, for_storage=True)
    return module


def _install(torch, module) -> None:
    """Kernels, fallbacks and hooks, once `neuron` is the PrivateUse1 name."""
    from neuron_emulator import (  # need "neuron"
        _accelerator,
        _autocast,
        _autoselect,
        _limits,
        _neuronx,
        _rng,
        _streams,
        _tensor,
        _tracing,
    )

    lib = torch.library.Library("_", "IMPL")
    lib.fallback(_tensor.factory, "PrivateUse1")
    lib.fallback(_limits.refuse_quantized, "QuantizedPrivateUse1")  # q.to("neuron")
    aten_lib = torch.library.Library("aten", "IMPL")
    aten_lib.impl("_copy_from", _tensor.copy_from, "PrivateUse1")
    # factories also as kernels of their own: the boxed fallback above is not reachable from
    # torch.tensor(..., device="neuron") while a dispatch mode is active (torch.compile's fake
    # tensors), PyTorch's trampoline looks for an impl registered for the op
    for name in _tensor.FACTORY_KERNELS:
        aten_lib.impl(name, _tensor.factory_kernel(name), "PrivateUse1")
    _libs.extend([lib, aten_lib])
    _autocast.register(_libs)
    _accelerator.install(module)
    _rng.install()
    _streams.install()
    _tensor.register_serialization()
    _tensor.install_fake_constant_guard()
    _autoselect.install()
    _tracing.install()
    _neuronx.install()
    _limits.install_transform_guards()
    _limits.install_storage_guard()
    _limits.install_backward_message()
    _tensor.install_foreach_types()
    _register_distributed()


def _register_distributed() -> None:
    """The `neuron` process-group backend, if torch.distributed is built in."""
    import torch.distributed as dist

    if dist.is_available():
        from neuron_emulator import _distributed

        _distributed.register()


def _real_torch_neuronx() -> str | None:
    """Where a real torch_neuronx would be imported from, if one is importable."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch_neuronx")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin == "neuron-emulator":
        return None
    return spec.origin or "torch_neuronx"


def autoload_disabled() -> bool:
    return os.getenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "1"


def _device_guard():
    """torch's Python device guard (backend_registration's dummy) with type_() returning a
    constant: C++ asks it on every device guard, hundreds of times a training step (the
    autograd engine, once per backward node), and the dummy looks up three attributes each."""
    import torch

    private_use1 = torch._C._autograd.DeviceType.PrivateUse1

    class Guard(torch._C._acc.DeviceGuard):
        def type_(self):
            return private_use1

    return Guard()
