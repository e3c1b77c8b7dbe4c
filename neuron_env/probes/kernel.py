"""The running kernel, its headers, the DKMS trees of the Neuron driver and the neuron.ko each
kernel has: files under the root only (no `dkms status`, no subprocess).

The running kernel is `uname -r` of this host; under --root it is a fact of the root: its
`proc/sys/kernel/osrelease` (a live root's /proc, or a fixture's file), else the only kernel
under `lib/modules` (an image boots the one it has), else unknown."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from neuron_env.guards.text import escape_controls
from neuron_env.util.record import record

if TYPE_CHECKING:
    from pathlib import Path

    from neuron_env.probes.host import Root

DKMS_NAMES = ("aws-neuronx", "aws-neuron")  # the DKMS module names of the two packages
MODULE_DIRS = ("updates/dkms", "extra", "updates", "kernel/drivers/neuron")
MAX_ENTRIES = 64  # a tree with more kernels or versions than this is not read further
_KERNEL = re.compile(r"[0-9][A-Za-z0-9._+~-]{0,126}")


@record
class DkmsBuild:
    module: str  # aws-neuronx or aws-neuron
    version: str
    kernel: str | None  # None: added (source only), built for no kernel
    built: bool  # a neuron.ko in the tree for that kernel


@record
class KernelFacts:
    running: str | None = None
    source: str = "unknown"
    installed: tuple[str, ...] = ()  # kernels under lib/modules
    with_module: tuple[str, ...] = ()  # kernels whose lib/modules has a neuron.ko
    with_headers: tuple[str, ...] = ()  # kernels whose headers are there (build/ or usr/src)
    dkms: tuple[DkmsBuild, ...] = ()


def _names(path: Path) -> list[str]:
    try:
        out = []
        for i, p in enumerate(path.iterdir()):
            if i >= MAX_ENTRIES:
                break
            out.append(p.name)
        return sorted(out)
    except OSError:
        return []


def _has_ko(path: Path) -> bool:
    return any(n.startswith("neuron.ko") for n in _names(path))


def _running(root: Root, installed: list[str]) -> tuple[str | None, str]:
    if not root.explicit:
        return os.uname().release, "uname -r"
    text = root.read("proc/sys/kernel/osrelease", limit=256)
    if text and _KERNEL.fullmatch(text.strip()):
        return text.strip(), "proc/sys/kernel/osrelease under the root"
    if len(installed) == 1:
        return installed[0], "the only kernel under lib/modules"
    return None, ("no proc/sys/kernel/osrelease under the root and "
                  f"{len(installed)} kernels under lib/modules")


def _headers(root: Root, kernel: str) -> bool:
    return any(root.file(rel).is_dir() for rel in (
        f"lib/modules/{kernel}/build", f"usr/src/linux-headers-{kernel}",
        f"usr/src/kernels/{kernel}"))


def _dkms(root: Root) -> tuple[DkmsBuild, ...]:
    out = []
    for module in DKMS_NAMES:
        base = root.file(f"var/lib/dkms/{module}")
        for version in _names(base):
            if not version[:1].isdigit():
                continue
            kernels = [k for k in _names(base / version) if k[:1].isdigit()]
            if not kernels:
                out.append(DkmsBuild(module, escape_controls(version), None, False))
            for k in kernels:
                built = any(_has_ko(base / version / k / arch / "module")
                            for arch in _names(base / version / k))
                out.append(DkmsBuild(module, escape_controls(version), escape_controls(k), built))
    return tuple(out)


def probe_kernel(root: Root) -> KernelFacts:
    installed = [k for k in _names(root.file("lib/modules")) if _KERNEL.fullmatch(k)]
    running, source = _running(root, installed)
    kernels = sorted(set(installed) | ({running} if running else set()))
    with_module = tuple(k for k in kernels if any(
        _has_ko(root.file(f"lib/modules/{k}/{d}")) for d in MODULE_DIRS))
    return KernelFacts(running=escape_controls(running) if running else None, source=source,
                       installed=tuple(escape_controls(k) for k in installed),
                       with_module=with_module,
                       with_headers=tuple(k for k in kernels if _headers(root, k)),
                       dkms=_dkms(root))
