"""Honest memory accounting per emulated device: the bytes of live device storages.

Like a caching allocator (CUDA's, the Neuron memory allocator's), a freed block stays reserved
until `empty_cache()` returns it, and a new allocation reuses reserved bytes first; so
memory_reserved() >= memory_allocated() at all times. Device memory per logical NeuronCore is
its share of the device's HBM (a Trainium2: 96 GiB over 8 physical cores, 24 GiB per logical
core at LNC=2); NEURON_EMULATOR_MEMORY_GIB overrides it. An allocation beyond what is free raises
an out-of-memory error instead of exhausting the host.
"""

from __future__ import annotations

import os
import threading
import weakref

import torch


def _memory_bytes() -> int:
    raw = os.environ.get("NEURON_EMULATOR_MEMORY_GIB", "").strip()
    if raw:
        return int(float(raw) * (1 << 30))
    from neuron_emulator import _devices

    return _devices.machine()["core_memory_bytes"]


MEMORY_BYTES = _memory_bytes()
_lock = threading.Lock()
_TENSOR = torch.Tensor


class _Stats:
    """One device's counters (slots: read and written on every fresh device tensor)."""

    __slots__ = ("alloc_bytes", "allocs", "cached", "count", "current", "freed_bytes", "frees",
                 "ooms", "peak", "reserved", "reserved_peak")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


_stats: dict[int, _Stats] = {}


class _StorageRef(weakref.ref):
    """A weak reference to a host storage that holds device memory, with what it counts.
    torch keeps one Python object per storage for as long as the storage lives (PyObject
    preservation), so the reference dies with the storage itself: after its last tensor or
    view, not with any one wrapper."""

    __slots__ = ("index", "key", "nbytes")


_live: dict[int, _StorageRef] = {}  # id(host storage) -> its reference


def _dev_stats(index: int) -> _Stats:
    s = _stats.get(index)
    if s is None:
        s = _stats[index] = _Stats()
    return s


def _alloc(nbytes: int, index: int) -> None:
    """Count an allocation (under _lock)."""
    s = _stats.get(index) or _dev_stats(index)
    cur = s.current + nbytes
    s.current = cur
    s.count += 1
    s.allocs += 1
    s.alloc_bytes += nbytes
    if cur > s.peak:
        s.peak = cur
    cached = s.cached  # freed-but-reserved bytes are reused first
    if cached >= nbytes:
        s.cached = cached - nbytes
    else:
        s.cached = 0
        r = s.reserved + nbytes - cached
        s.reserved = r
        if r > s.reserved_peak:
            s.reserved_peak = r


def _free(nbytes: int, index: int) -> None:
    """Count a free (under _lock): the bytes stay reserved until empty_cache()."""
    s = _stats.get(index) or _dev_stats(index)
    s.current -= nbytes
    s.count -= 1
    s.frees += 1
    s.freed_bytes += nbytes
    s.cached += nbytes


def _storage(elem: torch.Tensor):
    """The host storage behind `elem`, or None when there is no memory to count (a fake or
    functional tensor while torch.compile traces)."""
    if type(elem) is not _TENSOR and _is_traced(elem):
        return None
    try:
        return elem.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return None


def _bytes(st) -> int | None:
    """A storage's bytes (0 without data), or None for "an invalid python storage" (tracing)."""
    try:
        return st.nbytes() if st.data_ptr() else 0
    except (RuntimeError, NotImplementedError):
        return None


def track(elem: torch.Tensor, index: int) -> None:
    """Count `elem`'s storage on device `index` while it lives (`elem`: the host data of a
    device tensor). A view shares a counted storage: one dictionary look-up, nothing more.
    (No weakref on the device tensor itself: that would stop nn.Module.to() swapping it.)"""
    st = _storage(elem)
    if st is None or id(st) in _live:
        return
    nbytes = _bytes(st)
    if nbytes is None:
        return
    key = id(st)
    ref = _StorageRef(st, _dead)  # made outside the lock: an allocation may run the GC
    ref.key, ref.nbytes, ref.index = key, nbytes, index
    with _lock:
        if key in _live:  # another thread was first
            return
        _live[key] = ref
        if nbytes:
            _alloc(nbytes, index)


def _dead(ref: _StorageRef) -> None:
    with _lock:
        if _live.get(ref.key) is ref:
            del _live[ref.key]
            if ref.nbytes:
                _free(ref.nbytes, ref.index)


def _is_traced(elem: torch.Tensor) -> bool:
    """A fake or functional tensor (torch.compile tracing) has no memory to count."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(elem, FakeTensor) or torch._is_functional_tensor(elem)


def retrack(wrapper) -> None:
    """After resize_/set_ (FSDP2 frees and re-allocates by resizing): the wrapper's storage
    may be another one, or the same one with other bytes (freed, then allocated again)."""
    st = _storage(wrapper._elem)
    if st is None:
        return
    ref = _live.get(id(st))
    if ref is None:
        track(wrapper._elem, wrapper._dev)
        return
    nbytes = _bytes(st)
    if nbytes is None:
        return
    with _lock:
        if nbytes != ref.nbytes:
            if ref.nbytes:
                _free(ref.nbytes, ref.index)
            ref.nbytes = nbytes
            if nbytes:
                _alloc(nbytes, ref.index)


def check_allocation(shape, dtype, index: int) -> None:
    n = 1
    for s in shape:
        n *= int(s)
    size = n * torch.empty((), dtype=dtype or torch.get_default_dtype()).element_size()
    used = allocated(index)
    if size + used > MEMORY_BYTES:
        _dev_stats(index).ooms += 1
        raise torch.OutOfMemoryError(
            f"neuron (emulated): out of device memory on neuron:{index}: tried to allocate "
            f"{size / (1 << 30):.1f} GiB with {used / (1 << 30):.1f} GiB in use; the device has "
            f"{MEMORY_BYTES / (1 << 30):.0f} GiB (NEURON_EMULATOR_MEMORY_GIB)")


def allocated(index: int) -> int:
    return _dev_stats(index).current


def peak(index: int) -> int:
    return _dev_stats(index).peak


def reserved(index: int) -> int:
    return _dev_stats(index).reserved


def reserved_peak(index: int) -> int:
    return _dev_stats(index).reserved_peak


def empty_cache() -> None:
    """Return every device's freed-but-reserved bytes."""
    with _lock:
        for s in _stats.values():
            s.reserved -= s.cached
            s.cached = 0


def reset_peak(index: int) -> None:
    with _lock:
        s = _dev_stats(index)
        s.peak = s.current
        s.reserved_peak = s.reserved


def reset_accumulated(index: int) -> None:
    with _lock:
        s = _dev_stats(index)
        s.allocs = s.frees = s.alloc_bytes = s.freed_bytes = s.ooms = 0


def stats(index: int) -> dict:
    """A memory_stats() dict with the keys torch.cuda.memory_stats() uses (the "all" pool)."""
    s = _dev_stats(index).as_dict()
    out = {}
    for kind in ("allocated_bytes", "active_bytes", "requested_bytes"):
        out.update({f"{kind}.all.current": s["current"], f"{kind}.all.peak": s["peak"],
                    f"{kind}.all.allocated": s["alloc_bytes"],
                    f"{kind}.all.freed": s["freed_bytes"]})
    out.update({"reserved_bytes.all.current": s["reserved"],
                "reserved_bytes.all.peak": s["reserved_peak"],
                "inactive_split_bytes.all.current": s["cached"]})
    for kind in ("allocation", "segment", "active"):
        out.update({f"{kind}.all.current": s["count"], f"{kind}.all.allocated": s["allocs"],
                    f"{kind}.all.freed": s["frees"]})
    out.update({"num_alloc_retries": 0, "num_ooms": s["ooms"], "num_device_alloc": s["allocs"],
                "num_device_free": s["frees"]})
    return dict(sorted(out.items()))
