"""Which aten ops count as "native" on the emulated device, and tracking of the others.

Like TorchNeuron's eager mode, an op the device does not support runs on the CPU with a warning
(once per op) and is recorded; `get_fallback_ops()` lists them (the real backend's
`torch_neuronx.get_fallback_ops()`). Everything here runs on the CPU, of course: the split
models what a real device supports, so a migration rehearsal shows which ops would fall back.
"""

from __future__ import annotations

import threading
import warnings


class NeuronFallbackWarning(UserWarning):
    """An op ran on the CPU because the (emulated) neuron device does not support it."""


# aten overload-packet names (in-place `foo_` and `_foreach_*` variants follow their base op)
NATIVE_OPS = frozenset("""
empty empty_strided zeros ones full arange linspace randn rand randint normal uniform
bernoulli random fill zero copy _copy_from _to_copy clone detach alias view _unsafe_view
reshape expand permute transpose t as_strided slice select squeeze unsqueeze split
split_with_sizes unbind chunk cat stack resize set lift_fresh _local_scalar_dense
is_same_size contiguous empty_like zeros_like ones_like full_like new_empty
new_empty_strided new_zeros new_ones new_full scalar_tensor add sub rsub mul div neg
reciprocal pow sqrt rsqrt exp log log1p abs sign square maximum minimum clamp clamp_min
clamp_max where eq ne lt le gt ge logical_not logical_and logical_or masked_fill lerp
addcmul addcdiv mm bmm addmm baddbmm mv addmv dot matmul linear relu threshold_backward gelu
gelu_backward silu silu_backward sigmoid sigmoid_backward tanh tanh_backward _softmax
_softmax_backward_data _log_softmax _log_softmax_backward_data nll_loss_forward
nll_loss_backward mse_loss mse_loss_backward native_layer_norm native_layer_norm_backward
embedding embedding_dense_backward native_dropout native_dropout_backward sum mean amax amin
max min argmax argmin var std norm linalg_vector_norm index_select gather scatter index_add
""".split())

# collectives (c10d: the neuron process group) and FSDP2's own ops run on the device too
NATIVE_NAMESPACES = frozenset({"c10d", "_c10d_functional", "c10d_functional", "fsdp", "prims"})

_lock = threading.Lock()
_fallbacks: dict[str, int] = {}
_executed: dict[str, int] = {}
_warned: set[str] = set()


def base_name(packet: str) -> str:
    if packet.startswith("_foreach_"):
        return "_foreach_"
    if packet.endswith("_") and not packet.endswith("__"):
        return packet[:-1]
    return packet


def is_native(packet: str) -> bool:
    from neuron_emulator import _faults

    b = base_name(packet)
    if b in _faults.MATMULS and _faults.active("fallback"):
        return False
    return b == "_foreach_" or b in NATIVE_OPS


def note(func) -> None:
    """Record one execution of `func` (an OpOverload); warn once for a fallback op."""
    if getattr(_quiet, "on", 0):
        return
    packet = func.overloadpacket.__name__
    ns = func.namespace
    name = f"{ns}::{packet}"
    native = is_native(packet) if ns == "aten" else ns in NATIVE_NAMESPACES
    with _lock:
        _executed[name] = _executed.get(name, 0) + 1
        if native:
            return
        _fallbacks[name] = _fallbacks.get(name, 0) + 1
        first = name not in _warned
        _warned.add(name)
    if first:
        warnings.warn(f"{name} is not supported on the neuron device (emulated); it ran on the "
                      "CPU", NeuronFallbackWarning, stacklevel=4)


def get_fallback_ops() -> list[str]:
    """Ops that fell back to the CPU since the last clear, sorted (`aten::cumsum`, ...)."""
    with _lock:
        return sorted(_fallbacks)


def get_executed_ops() -> dict[str, int]:
    """Every op executed on the device since the last clear, with counts."""
    with _lock:
        return dict(sorted(_executed.items()))


def clear_fallback_ops() -> None:
    """Forget recorded ops; a fallback warns again after a clear."""
    with _lock:
        _fallbacks.clear()
        _executed.clear()
        _warned.clear()


_quiet = threading.local()


class quiet:
    """Ops traced (not run) inside this block are neither recorded nor warned about."""

    def __enter__(self):
        _quiet.on = getattr(_quiet, "on", 0) + 1

    def __exit__(self, *exc) -> bool:
        _quiet.on -= 1
        return False


def record_fallback(name: str) -> None:
    """An op that falls back under torch.compile (TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0)."""
    with _lock:
        _fallbacks[name] = _fallbacks.get(name, 0) + 1
