# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib +
# torch (passed in). The device: opening it, its identity, op tracking, memory and timing.
import contextlib
import statistics
import sys
import time

from _shared import sync
from _trial_common import add


def device_module(torch, device):
    return None if device.type == "cpu" else getattr(torch, device.type, None)


def open_device(torch, name):
    try:
        device = torch.device(name)
    except RuntimeError as e:
        return None, "no %r device in this torch: %s" % (name, e)
    if device.type == "cpu":
        return device, None
    mod = device_module(torch, device)
    available = bool(mod and mod.is_available())
    count = mod.device_count() if mod and available else 0
    if not available or count == 0:
        return None, "%s device not available (count %d)" % (name, count)
    return device, None


def identity(torch, name):
    emu = sys.modules.get("neuron_emulator")
    emulated = bool(emu is not None and getattr(emu, "is_loaded", lambda: False)()) \
        and name == "neuron"
    info = {"torch": torch.__version__, "emulated": emulated}
    if emulated:
        info["emulator"] = getattr(emu, "__version__", "?")
    elif name == "neuron":
        try:
            from importlib import metadata
            info["torch_neuronx"] = metadata.version("torch-neuronx")
        except Exception:
            info["torch_neuronx"] = None
    if name == "cuda" and torch.cuda.is_available():
        info["device_name"] = torch.cuda.get_device_name(0)
    return info


def tracking_api(torch, device):
    """(api, counts_fn): the op-tracking API of the device's backend, or (None, None)."""
    if device.type in ("cpu", "cuda"):
        return None, None
    api = None
    try:
        import torch_neuronx
        if hasattr(torch_neuronx, "get_fallback_ops"):
            api = torch_neuronx
    except Exception:
        pass
    emu = sys.modules.get("neuron_emulator")
    if api is None:
        api = emu if emu is not None and hasattr(emu, "get_fallback_ops") else \
            getattr(torch, "neuron", None)
        api = api if hasattr(api, "get_fallback_ops") else None

    def counts():
        for src in (emu, api):
            got = getattr(src, "get_executed_ops", lambda: None)() if src is not None else None
            if isinstance(got, dict):  # the emulator lists fallbacks apart: count both
                return dict(got, **getattr(src, "get_fallback_counts", dict)())
        return None
    return api, counts


def clear_tracking(api):
    if api is None:
        return
    for name in ("clear_op_tracking", "clear_fallback_ops"):
        if hasattr(api, name):
            getattr(api, name)()
            return


def memory_api(torch, device):
    mod = device_module(torch, device)
    if mod is None or not hasattr(mod, "max_memory_allocated"):
        return None
    return mod


def reset_peak(mem):
    if mem is not None and hasattr(mem, "reset_peak_memory_stats"):
        mem.reset_peak_memory_stats()


def timed(torch, device, fn, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        sync(torch, device)
        times.append(time.perf_counter() - t0)
    return times


MAX_SAMPLES = 1000  # every timed iteration is kept (the host judges spread and outliers)


def stats(first, times):
    q = statistics.quantiles(times, n=4, method="inclusive") if len(times) > 1 else (
        [times[0]] * 3 if times else [None] * 3)
    return {"first_call_s": first, "iterations": len(times),
            "median_s": statistics.median(times) if times else None,
            "min_s": min(times) if times else None, "max_s": max(times) if times else None,
            "stdev_s": statistics.pstdev(times) if len(times) > 1 else 0.0,
            "q1_s": q[0], "q3_s": q[2], "samples_s": times[:MAX_SAMPLES]}


def peak_bytes(t):
    try:
        return int(t.mem.max_memory_allocated()) if t.mem is not None else None
    except Exception:
        return None


def read_tracking(t):
    if t.api is None:
        return None
    ops = list(t.api.get_fallback_ops())
    executed = getattr(t.api, "get_executed_ops", lambda: None)()
    counts = t.counts()
    return {"ops": ops, "executed": sorted(executed) if executed is not None else None,
            "counts": {o: counts.get(o) for o in ops} if counts is not None else None,
            "executed_counts": counts}


@contextlib.contextmanager
def tracked(t, phase):
    """Op tracking around one phase of the trial (forward, backward, steps, compile, shapes,
    generate): cleared before, read after (after a crash too), kept in t.phases[phase]."""
    if t.api is None:
        yield
        return
    clear_tracking(t.api)
    try:
        yield
    finally:
        record_phase(t, phase, read_tracking(t))


def record_phase(t, phase, fb):
    if fb is not None:
        t.phases[phase] = fb


def all_phases(phases):
    """The phases' tracking merged: every op that fell back in any phase (in order of first
    appearance), counts summed, ops executed on the device united; None without tracking."""
    if not phases:
        return None
    ops, counts, executed, executed_counts = [], {}, set(), {}
    for fb in phases.values():
        for o in fb["ops"]:
            if o not in ops:
                ops.append(o)
        for o, n in (fb.get("counts") or {}).items():
            if n is not None:
                counts[o] = counts.get(o, 0) + n
        executed |= set(fb.get("executed") or ())
        for o, n in (fb.get("executed_counts") or {}).items():
            executed_counts[o] = executed_counts.get(o, 0) + n
    known = any(fb.get("counts") is not None for fb in phases.values())
    return {"ops": ops, "counts": {o: counts.get(o) for o in ops} if known else None,
            "executed": sorted(executed) if any(fb.get("executed") is not None
                                                for fb in phases.values()) else None,
            "executed_counts": executed_counts or None}


def size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0


def memory(t):
    peaks = getattr(t, "peak", {}) or {}
    if t.mem is None or not any(v is not None for v in peaks.values()):
        add("memory", "skip", "peak device memory: not reported by the %s backend"
            % t.device.type)
        return
    parts = ", ".join("%s %s" % (k, size(v)) for k, v in peaks.items() if v is not None)
    add("memory", "pass", "peak device memory: %s" % parts, peak_bytes=peaks)
