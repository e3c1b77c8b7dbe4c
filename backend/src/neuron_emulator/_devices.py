"""How many emulated devices there are, which one is current, and device-index checks.

The emulated machine is the one a user would rehearse for: the instance type in
NEURON_EMULATOR_INSTANCE_TYPE when it is a known Trainium type, else this EC2 instance's own type
from DMI (sys_vendor "Amazon EC2", product_name) when that is one, else the smallest Trn2, a
trn2.3xlarge (one Trainium2). Its logical
NeuronCores are the physical cores divided by the LNC (NEURON_LOGICAL_NC_CONFIG, default 2 on
Trainium2/3, 1 on Trainium1): 4 on a trn2.3xlarge, 64 on a trn2.48xlarge.
NEURON_EMULATOR_DEVICES=N overrides the count. NEURON_RT_VISIBLE_CORES ("0-3", "1,5", "2") then
selects which of them this process sees, renumbered from 0, as the Neuron runtime does.
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


# instance type -> (Neuron devices, physical NeuronCores per device, default LNC), from AWS's
# Trn1/Trn2 instance pages as docs/emulator.md ("Default machine") gives them: trn2.3xlarge's
# single device is AWS's figure as moto and the instance listings give it (the docs do not
# confirm it); trn3
# sizes are not published, so a trn3 type is not guessed at (the default machine is used).
INSTANCE_TYPES = {
    "trn1.2xlarge": (1, 2, 1),
    "trn1.32xlarge": (16, 2, 1),
    "trn1n.32xlarge": (16, 2, 1),
    "trn2.3xlarge": (1, 8, 2),
    "trn2.48xlarge": (16, 8, 2),
    "trn2u.48xlarge": (16, 8, 2),
    "trn2n.48xlarge": (16, 8, 2),
}
DEFAULT_INSTANCE = "trn2.3xlarge"
# device memory (HBM) of one Neuron device, by family: a Trainium2 has 96 GiB
# (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/arch/trainium2_arch.html), a
# Trainium 32 GiB (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/
# neuron-hardware/trainium.html); a logical NeuronCore has its physical cores' share (LNC
# "combines the compute and memory resources of multiple physical NeuronCores").
DEVICE_MEMORY_GIB = {"trn1": 32, "trn2": 96}


DMI = "/sys/class/dmi/id"  # NEURON_EMULATOR_DMI_DIR replaces it (tests)


def _dmi_instance_type() -> str | None:
    """This EC2 instance's type from DMI (no network, microseconds), or None elsewhere."""
    d = os.environ.get("NEURON_EMULATOR_DMI_DIR") or DMI
    try:
        with open(os.path.join(d, "sys_vendor"), encoding="ascii", errors="replace") as f:
            if f.read(64).strip() != "Amazon EC2":
                return None
        with open(os.path.join(d, "product_name"), encoding="ascii", errors="replace") as f:
            return f.read(64).strip().lower() or None
    except OSError:
        return None


def machine() -> dict:
    """The emulated machine: {"instance_type", "from", "lnc", "logical_cores",
    "device_memory_gib", "core_memory_bytes"} (core: one logical NeuronCore)."""
    asked = os.environ.get("NEURON_EMULATOR_INSTANCE_TYPE", "").strip().lower()
    here = None if asked in INSTANCE_TYPES else _dmi_instance_type()
    if asked in INSTANCE_TYPES:
        itype, source = asked, "NEURON_EMULATOR_INSTANCE_TYPE"
    elif here in INSTANCE_TYPES:
        itype, source = here, "this EC2 instance (DMI product_name)"
    else:
        itype = DEFAULT_INSTANCE
        source = (f"default (NEURON_EMULATOR_INSTANCE_TYPE={asked!r} is not a known Trainium "
                  "type)" if asked else "default: the smallest Trn2")
    devices, cores, lnc = INSTANCE_TYPES[itype]
    raw = os.environ.get("NEURON_LOGICAL_NC_CONFIG", "").strip()
    if raw:
        if raw not in ("1", "2") or (lnc == 1 and raw != "1"):
            raise ValueError(f"NEURON_LOGICAL_NC_CONFIG={raw!r}: expected "
                             f"{'1' if lnc == 1 else '1 or 2'} on a {itype}")
        lnc = int(raw)
    gib = DEVICE_MEMORY_GIB[itype[:4]]
    return {"instance_type": itype, "from": source, "lnc": lnc,
            "logical_cores": devices * cores // lnc, "device_memory_gib": gib,
            "core_memory_bytes": gib * (1 << 30) * lnc // cores}


def _count() -> int:
    raw = os.environ.get("NEURON_EMULATOR_DEVICES", "").strip()
    if raw and (not raw.isdigit() or int(raw) < 1):
        raise ValueError(f"NEURON_EMULATOR_DEVICES={raw!r}: expected a whole number >= 1")
    total = int(raw) if raw else machine()["logical_cores"]
    visible = os.environ.get("NEURON_RT_VISIBLE_CORES", "").strip()
    if not visible:
        return total
    cores = _parse_cores(visible)
    bad = [c for c in cores if c >= total]
    if bad:
        where = ("NEURON_EMULATOR_DEVICES" if raw else
                 f"a {machine()['instance_type']}: NEURON_EMULATOR_INSTANCE_TYPE, "
                 "NEURON_LOGICAL_NC_CONFIG, NEURON_EMULATOR_DEVICES")
        raise ValueError(f"NEURON_RT_VISIBLE_CORES={visible!r} names core(s) {bad}, but the "
                         f"emulated machine has {total} ({where})")
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
