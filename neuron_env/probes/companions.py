"""backend.companions' import probe: import torch, then each installed torch companion
(torchvision, torchaudio, torchao; torchao-neuron provides torchao) in a child of the target
interpreter (inside/companions.py).

Importing torch costs seconds (about 1-2 s for a CPU torch, more for CUDA builds), so the child
is started only when doctor runs backend.companions AND a companion is installed beside torch;
an environment without one pays nothing. The child has its own timeout (IMPORT_TIMEOUT)."""

from __future__ import annotations

import time
from typing import Any

from neuron_env.target_python import launch, protocol
from neuron_env.util.record import factory, record

# distribution name -> the module its import probe imports
COMPANION_MODULES = {"torchvision": "torchvision", "torchaudio": "torchaudio",
                     "torchao": "torchao", "torchao-neuron": "torchao"}
IMPORT_TIMEOUT = 60.0


@record
class CompanionImports:
    """What importing torch and the companions in the target gave."""

    torch_version: str | None = None
    torch_error: str | None = None
    modules: dict[str, Any] = factory(dict)  # module -> None (imported) | {"error", "cause"}
    error: str | None = None  # the probe itself failed (timed out, no JSON)
    seconds: float | None = None  # the child's wall time, start-up included

    def failure(self, module: str) -> dict[str, Any] | None:
        got = self.modules.get(module)
        return got if isinstance(got, dict) else None

    def serialize(self) -> dict[str, Any]:
        return {"torch_version": self.torch_version, "torch_error": self.torch_error,
                "modules": dict(self.modules), "error": self.error, "seconds": self.seconds}


def installed_companions(target: Any, names: tuple[str, ...] | None = None) -> list[str]:
    """The companion distributions installed in the target (only when torch is too)."""
    if not getattr(target, "usable", False) or target.dist("torch") is None:
        return []
    return [n for n in (names or tuple(COMPANION_MODULES)) if target.dist(n) is not None]


def start_companions(target: Any, names: tuple[str, ...] | None = None,
                     timeout: float = IMPORT_TIMEOUT) -> tuple[Any, float, float] | None:
    """Start the import child (None when no companion is installed: nothing is started);
    `finish_companions` collects it, so the rest of the host is probed meanwhile."""
    found = installed_companions(target, names)
    if not found:
        return None
    modules = list(dict.fromkeys(COMPANION_MODULES.get(n, n.replace("-", "_")) for n in found))
    # isolated like doctor's own probe (target_python/launch TOOL mode: -I, cwd /)
    running = launch.spawn_probe(target.path, "companions.py", timeout=timeout, args=modules)
    return running, time.monotonic(), timeout


def finish_companions(started: tuple[Any, float, float] | None) -> CompanionImports | None:
    if started is None:
        return None
    running, t0, timeout = started
    res = running.result()
    took = round(time.monotonic() - t0, 3)
    doc = protocol.document(res.stdout)
    if doc is not None and isinstance(doc.get("torch"), dict):
        t = doc["torch"]
        return CompanionImports(torch_version=t.get("version"), torch_error=t.get("error"),
                                modules=dict(doc.get("modules") or {}), seconds=took)
    why = (f"did not finish within {timeout:.0f}s" if res.timed_out else
           f"exited {res.returncode}: {res.tail(300)}")
    return CompanionImports(error=f"the import probe {why}", seconds=took)


def probe_companions(target: Any, names: tuple[str, ...] | None = None,
                     timeout: float = IMPORT_TIMEOUT) -> CompanionImports | None:
    """None when no companion is installed (nothing is started)."""
    return finish_companions(start_companions(target, names, timeout))
