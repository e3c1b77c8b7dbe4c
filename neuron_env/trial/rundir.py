"""The distributed trial's private run directories: made 0700 by the running user, with an
owner record (the pid and start time of the neuron-env that made it), and the ones a dead run
left behind (a neuron-env killed by SIGKILL removes nothing) found, swept and removed on the
next run, or named when they cannot be judged."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neuron_env.guards.trust import why_untrusted

PREFIX = "neuron-env-trial-dist-"
OWNER = "owner"  # "<pid> <start time in clock ticks since boot>"


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (the start time: a pid reused later has another)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the command name may hold spaces
    return fields[19] if len(fields) > 19 else None


def create() -> str:
    """A fresh run directory: 0700, ours, with our owner record."""
    path = tempfile.mkdtemp(prefix=PREFIX)  # mode 0700, owned by the running user
    fd = os.open(os.path.join(path, OWNER), os.O_WRONLY | os.O_CREAT | os.O_EXCL
                 | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()} {start_time(os.getpid()) or '-'}\n")
    return path


def _owner(path: str) -> tuple[int, str] | None:
    try:
        fd = os.open(os.path.join(path, OWNER), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        parts = f.read(64).decode("ascii", "replace").split()
    if len(parts) != 2 or not parts[0].isdigit():
        return None
    return int(parts[0]), parts[1]


def stale(sweep: Callable[[str], None], base: str | None = None) -> list[dict[str, Any]]:
    """Run directories a dead run of this user left in `base` (the temporary directory): each
    one's leftover processes swept (`sweep`), then the directory removed. One whose owner
    cannot be told is named, not removed; other users' directories are not ours to judge."""
    base = base or tempfile.gettempdir()
    found: list[dict[str, Any]] = []
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX)]
    except OSError:
        return found
    for e in entries:
        try:
            st = os.lstat(e.path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        why = why_untrusted(st)  # guards/trust: ours, and writable by no one else
        if why:
            found.append({"path": e.path, "removed": False, "why": f"not trusted: {why}"})
            continue
        owner = _owner(e.path)
        if owner is None:
            found.append({"path": e.path, "removed": False,
                          "why": "no owner record (left by an older neuron-env?)"})
            continue
        pid, started = owner
        if pid != os.getpid() and start_time(pid) == started:
            continue  # a run in progress
        with contextlib.suppress(OSError):
            sweep(e.path)
        shutil.rmtree(e.path, ignore_errors=True)
        found.append({"path": e.path, "pid": pid, "removed": not os.path.lexists(e.path)})
    return found


def summary(found: list[dict[str, Any]]) -> str:
    """The words for the report: what this run removed or left for the user."""
    gone = [f for f in found if f["removed"]]
    kept = [f for f in found if not f["removed"]]
    out = []
    if gone:
        out.append(f"removed {len(gone)} run director{'y' if len(gone) == 1 else 'ies'} left "
                   f"by a dead trial (pid {', '.join(str(f['pid']) for f in gone)}): "
                   + ", ".join(f["path"] for f in gone))
    if kept:
        out.append(f"left {len(kept)} run director{'y' if len(kept) == 1 else 'ies'} it could "
                   "not judge (remove when no trial runs): "
                   + ", ".join(f["path"] for f in kept))
    return "; ".join(out)
