"""The resource limits a multi-rank job inherits: open files (RLIMIT_NOFILE) and locked memory
(RLIMIT_MEMLOCK), read from /proc/self/limits (this process: what the shell hands the job).
Under --root they are a fact of the root: its `proc/1/limits` (a live root's first process, a
container's entrypoint, or a fixture's file), else what `etc/security/limits.conf` and
`limits.d/*.conf` set for every user ("*"), else unknown."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from neuron_env.util.record import record

if TYPE_CHECKING:
    from neuron_env.probes.host import Root

UNLIMITED = -1
MAX_CONF = 32  # limits.d files read at most


@record
class LimitFacts:
    nofile_soft: int | None = None  # None: unknown; UNLIMITED for "unlimited"
    nofile_hard: int | None = None
    memlock_soft: int | None = None  # bytes
    memlock_hard: int | None = None
    source: str | None = None  # where they were read; None: nowhere


def _num(text: str, scale: int = 1) -> int | None:
    t = text.strip().lower()
    if t in ("unlimited", "infinity", "-1"):
        return UNLIMITED
    return int(t) * scale if t.isdigit() else None


def parse_proc_limits(text: str) -> dict[str, tuple[int | None, int | None]]:
    """`Max open files  1024  1048576  files` -> {"nofile": (1024, 1048576)}, memlock likewise
    (in bytes, as the kernel writes it)."""
    out = {}
    for line in text.splitlines():
        for key, label in (("nofile", "Max open files"), ("memlock", "Max locked memory")):
            if line.startswith(label):
                parts = line[len(label):].split()
                if len(parts) >= 2:
                    out[key] = (_num(parts[0]), _num(parts[1]))
    return out


_CONF = re.compile(r"^\s*(\S+)\s+(soft|hard|-)\s+(nofile|memlock)\s+(\S+)\s*$")


def parse_limits_conf(text: str, into: dict[str, int | None]) -> None:
    """pam_limits lines for every user (`*`): `* soft nofile 65535`, `* - memlock unlimited`
    (memlock is in KiB there); later lines win, as pam_limits reads them."""
    for line in text.splitlines():
        m = _CONF.match(line.split("#", 1)[0])
        if not m or m.group(1) != "*":
            continue
        _, kind, item, value = m.groups()
        v = _num(value, 1024 if item == "memlock" else 1)
        for k in (("soft", "hard") if kind == "-" else (kind,)):
            into[f"{item}_{k}"] = v


def _from_conf(root: Root) -> LimitFacts:
    vals: dict[str, int | None] = {}
    for rel in ["etc/security/limits.conf", *conf_d(root, "etc/security/limits.d")]:
        text = root.read(rel, limit=256 << 10)
        if text is not None:
            parse_limits_conf(text, vals)
    if not vals:
        return LimitFacts(source=None)
    return LimitFacts(vals.get("nofile_soft"), vals.get("nofile_hard"),
                      vals.get("memlock_soft"), vals.get("memlock_hard"),
                      source="etc/security/limits.conf under the root (the user '*')")


def conf_d(root: Root, rel: str) -> list[str]:
    """The *.conf files of an include directory under the root, in name order (at most
    MAX_CONF): limits.d, ld.so.conf.d."""
    try:
        names = sorted(p.name for p in root.file(rel).iterdir() if p.name.endswith(".conf"))
    except OSError:
        return []
    return [f"{rel}/{n}" for n in names[:MAX_CONF]]


def probe_limits(root: Root) -> LimitFacts:
    rel = "proc/1/limits" if root.explicit else "proc/self/limits"
    text = root.read(rel, limit=64 << 10)
    if text:
        got = parse_proc_limits(text)
        if got:
            nf, ml = got.get("nofile", (None, None)), got.get("memlock", (None, None))
            where = (f"{rel} under the root" if root.explicit
                     else "this process (the limits the shell hands a job)")
            return LimitFacts(nf[0], nf[1], ml[0], ml[1], source=where)
    return _from_conf(root) if root.explicit else LimitFacts()
