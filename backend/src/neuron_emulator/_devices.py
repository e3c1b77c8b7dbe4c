"""How many emulated devices there are, which one is current, and device-index checks.

NEURON_EMULATOR_DEVICES sets how many logical NeuronCores the emulated machine has (default 1;
64 is a trn2.48xlarge at LNC=2). NEURON_RT_VISIBLE_CORES ("0-3", "1,5", "2") then selects which
of them this process sees, renumbered from 0, as the Neuron runtime does; without
NEURON_EMULATOR_DEVICES the machine is taken to have as many cores as the highest one listed.
"""

from __future__ import annotations

import os
import threading


def _parse_cores(text: str) -> list[int]:
    cores: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"NEURON_RT_VISIBLE_CORES={text!r}: expected core numbers and "
                             "ranges such as '0-3' or '1,5'")
        cores.extend(range(int(lo), int(hi or lo) + 1))
    return cores


def _count() -> int:
    raw = os.environ.get("NEURON_EMULATOR_DEVICES", "").strip()
    if raw and (not raw.isdigit() or int(raw) < 1):
        raise ValueError(f"NEURON_EMULATOR_DEVICES={raw!r}: expected a whole number >= 1")
    visible = os.environ.get("NEURON_RT_VISIBLE_CORES", "").strip()
    if not visible:
        return int(raw or 1)
    cores = _parse_cores(visible)
    total = int(raw) if raw else max(cores, default=0) + 1
    bad = [c for c in cores if c >= total]
    if bad:
        raise ValueError(f"NEURON_RT_VISIBLE_CORES={visible!r} names core(s) {bad}, but the "
                         f"emulated machine has {total} (NEURON_EMULATOR_DEVICES)")
    return len(dict.fromkeys(cores))


COUNT = _count()
_local = threading.local()


def current() -> int:
    return getattr(_local, "index", 0)


def check(index: int) -> int:
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < COUNT:
        raise RuntimeError(f"neuron (emulated): invalid device index {index!r}: device index "
                           f"out of range, it must be in [0, {COUNT}) (there "
                           f"{'is 1 device' if COUNT == 1 else f'are {COUNT} devices'}: "
                           "NEURON_EMULATOR_DEVICES, NEURON_RT_VISIBLE_CORES)")
    return index


def index_of(device) -> int:
    """The index of a device given as int, str, torch.device or None (None: the current)."""
    import torch

    if device is None:
        return current()
    if isinstance(device, int) and not isinstance(device, bool):
        return check(device)
    d = torch.device(device)
    if d.type != "neuron":
        raise ValueError(f"neuron (emulated): expected a neuron device, got {d}")
    return current() if d.index is None else check(d.index)


def set_current(device) -> None:
    _local.index = index_of(device)


class device:
    """`with torch.neuron.device(1):` makes neuron:1 the current device inside the block."""

    def __init__(self, device) -> None:
        self.idx = -1 if device is None or device == -1 else index_of(device)
        self.prev = -1

    def __enter__(self):
        self.prev = current()
        if self.idx >= 0:
            _local.index = self.idx
        return self

    def __exit__(self, *exc) -> bool:
        _local.index = self.prev
        return False
