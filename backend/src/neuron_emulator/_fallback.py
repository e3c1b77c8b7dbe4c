"""Which aten ops the emulated device supports, and tracking of the others.

Like TorchNeuron's eager mode, an op the device does not support runs on the CPU with a warning
(once per op) and is recorded; `get_fallback_ops()` lists them (the real backend's
`torch_neuronx.get_fallback_ops()`). Everything here runs on the CPU, of course: the split
models what a real device supports, so a migration rehearsal shows which ops would fall back.

The unsupported set is data: `ops_2.33.json` beside this file (every entry names its source),
or the file named by NEURON_EMULATOR_OPS. Every aten op outside it is native.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

DEFAULT_OPS_FILE = Path(__file__).with_name("ops_2.33.json")


class NeuronFallbackWarning(UserWarning):
    """An op ran on the CPU because the (emulated) neuron device does not support it."""


def load_ops(path: str | os.PathLike | None = None) -> dict:
    """The op-support data: {"release", "about", "sources", "unsupported": [{"op", "source"}]}.
    A malformed file raises ValueError naming the file and what is wrong."""
    path = Path(path or os.environ.get("NEURON_EMULATOR_OPS") or DEFAULT_OPS_FILE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"NEURON_EMULATOR_OPS: cannot read op data {path}: {e}") from None
    entries = data.get("unsupported") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"op data {path}: expected an object with an 'unsupported' list")
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("op"), str) and e["op"]
                and isinstance(e.get("source"), str) and e["source"].strip()):
            raise ValueError(f"op data {path}: entry {i} needs a non-empty 'op' and 'source' "
                             f"(got {e!r})")
    data["path"] = str(path)
    return data


OPS_DATA = load_ops()
UNSUPPORTED_OPS = frozenset(e["op"] for e in OPS_DATA["unsupported"])

# collectives (c10d: the neuron process group) and FSDP2's own ops run on the device too
NATIVE_NAMESPACES = frozenset({"c10d", "_c10d_functional", "c10d_functional", "fsdp", "prims"})

_lock = threading.Lock()
_fallbacks: dict[str, int] = {}
_executed: dict[str, int] = {}
_warned: set[str] = set()
_by_func: dict = {}  # OpOverload -> (name, native): the per-op cost is one dict lookup


def base_name(packet: str) -> str:
    """The forward op an aten name follows: in-place and backward variants follow theirs."""
    if packet.startswith("_foreach_"):
        return "_foreach_"
    if packet.endswith("_") and not packet.endswith("__"):
        packet = packet[:-1]
    for suffix in ("_backward_data", "_backward"):
        if packet.endswith(suffix):
            return packet[: -len(suffix)]
    return packet


def is_native(packet: str) -> bool:
    from neuron_emulator import _faults

    b = base_name(packet)
    if b in _faults.MATMULS and _faults.active("fallback"):
        return False
    return packet not in UNSUPPORTED_OPS and b not in UNSUPPORTED_OPS


def is_native_op(func) -> bool:
    """is_native for one aten OpOverload: an entry `packet.overload` names that overload only
    (sort.default falls back, sort.stable is native)."""
    packet = func.overloadpacket.__name__
    return is_native(packet) and f"{packet}.{func._overloadname}" not in UNSUPPORTED_OPS


def _classify(func) -> tuple[str, bool]:
    packet = func.overloadpacket.__name__
    ns = func.namespace
    entry = (f"{ns}::{packet}", is_native_op(func) if ns == "aten" else ns in NATIVE_NAMESPACES)
    _by_func[func] = entry
    return entry


def entry(func) -> tuple[str, bool]:
    """("ns::name", native?) of an OpOverload, as note()/count() record it."""
    got = _by_func.get(func)
    return got if got is not None else _classify(func)


def note(func) -> None:
    """Record one execution of `func` (an OpOverload); warn once for a fallback op."""
    count(entry(func))


def count(entry: tuple[str, bool]) -> None:
    """Record one execution of the op `entry` names; warn once for a fallback op."""
    if _quiet.__dict__.get("on"):
        return
    name, native = entry
    if native:  # the common case: a count, no lock (a lost count under threads at worst)
        _executed[name] = _executed.get(name, 0) + 1
        return
    with _lock:  # a fallback ran on the CPU: listed apart, not as executed on the device
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
    """Every op executed on the device since the last clear, with counts; ops that fell back to
    the CPU are not in it (get_fallback_ops lists them)."""
    return dict(sorted(_executed.copy().items()))  # copy(): atomic, counts are lock-free


def get_fallback_counts() -> dict[str, int]:
    """Every op that fell back to the CPU since the last clear, with counts."""
    with _lock:
        return dict(sorted(_fallbacks.items()))


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
