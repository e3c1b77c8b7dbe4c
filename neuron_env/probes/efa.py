"""EFA: the InfiniBand devices under sysfs, the uverbs nodes, and `fi_info -p efa` when present."""

from __future__ import annotations

import os
import shutil

from neuron_env.guards import proc
from neuron_env.probes.host import Root
from neuron_env.util.record import record

TIMEOUT = 5.0
FI_INFO_FALLBACK = "/opt/amazon/efa/bin/fi_info"


@record
class EfaFacts:
    ib_devices: tuple[str, ...] = ()  # /sys/class/infiniband/* (rdmap…, efa_…)
    uverbs: tuple[str, ...] = ()  # /dev/infiniband/uverbs*
    fi_info_path: str | None = None
    fi_info_providers: int | None = None  # `provider: efa` entries; None = not run
    fi_info_error: str | None = None


def _names(root: Root, rel: str, prefix: str = "") -> tuple[str, ...]:
    try:
        return tuple(sorted(p.name for p in root.file(rel).iterdir()
                            if p.name.startswith(prefix)))
    except OSError:
        return ()


def _fi_info(path: str) -> tuple[int | None, str | None]:
    res = proc.run([path, "-p", "efa"], timeout=TIMEOUT)
    if res.timed_out:
        return None, f"fi_info -p efa hung (killed after {TIMEOUT:.0f}s)"
    if res.error:
        return None, f"fi_info could not run: {res.error}"
    count = sum(1 for ln in res.stdout.splitlines() if ln.strip() == "provider: efa")
    if res.returncode != 0 and not count:
        return 0, f"fi_info -p efa exited {res.returncode}: {res.tail(200) or '(no output)'}"
    return count, None


def probe_efa(root: Root, path_env: str | None = None) -> EfaFacts:
    ib = _names(root, "sys/class/infiniband")
    uverbs = _names(root, "dev/infiniband", "uverbs")
    if root.explicit:  # fi_info describes the running host, not the root
        return EfaFacts(ib, uverbs)
    fi = shutil.which("fi_info", path=path_env) or (
        FI_INFO_FALLBACK if os.access(FI_INFO_FALLBACK, os.X_OK) else None)
    if fi is None:
        return EfaFacts(ib, uverbs)
    count, error = _fi_info(fi)
    return EfaFacts(ib, uverbs, fi, count, error)
