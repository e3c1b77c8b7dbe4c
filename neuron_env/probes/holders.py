"""The processes neuron-ls lists as holding NeuronCores, and whether each is still alive."""

from __future__ import annotations

from neuron_env.probes.host import Root
from neuron_env.util.record import record


@record
class Holder:
    pid: int
    command: str
    devices: tuple[int, ...]
    runtime_version: str | None = None
    alive: bool | None = None  # None: not knowable (a mounted image, no /proc)
    zombie: bool = False
    ppid: int | None = None


def _proc_state(root: Root, pid: int) -> tuple[bool, bool, int | None]:
    stat = root.read(f"proc/{pid}/stat", limit=4096)
    if stat is None:
        return False, False, None
    rest = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
    state = rest[0] if rest else "?"
    try:
        ppid = int(rest[1])
    except (IndexError, ValueError):
        ppid = None
    return True, state in ("Z", "X"), ppid


def probe_holders(root: Root, devices) -> tuple[Holder, ...]:
    """`devices`: neuron-ls's device objects (or None)."""
    by_pid: dict[int, dict] = {}
    for d in devices or ():
        for p in d.get("neuron_processes") or ():
            if not isinstance(p, dict) or not isinstance(p.get("pid"), int):
                continue
            e = by_pid.setdefault(p["pid"], {"command": str(p.get("command") or "?"),
                                             "devices": [], "rt": p.get("neuron_runtime_version")})
            e["devices"].append(d.get("neuron_device"))
    live = root.file("proc").is_dir()
    out = []
    for pid, e in sorted(by_pid.items()):
        alive, zombie, ppid = _proc_state(root, pid) if live else (None, False, None)
        out.append(Holder(pid, e["command"], tuple(x for x in e["devices"] if isinstance(x, int)),
                          e["rt"], alive, zombie, ppid))
    return tuple(out)
