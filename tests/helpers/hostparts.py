"""Host parts the doctor fixtures need beyond tests/helpers/roots.py: an rpm database (sqlite,
with header blobs written by the public format), dpkg stanzas in any state, DKMS trees and
kernels, /proc limits, ELF shared objects with DT_NEEDED entries."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

# -- rpm headers (https://rpm-software-management.github.io/rpm/manual/format_header.html) ------
RPM_STRING, RPM_INT32, RPM_BIN = 6, 4, 7
TAGS = {"name": 1000, "version": 1001, "release": 1002, "epoch": 1003, "arch": 1022}


def rpm_header(name: str, version: str, release: str = "1", arch: str = "x86_64",
               epoch: int | None = None) -> bytes:
    """One header blob as rpmdb.sqlite stores it: il, dl, the index (a leading immutable
    region entry as rpm writes it), the data store; big-endian."""
    entries: list[tuple[int, int, bytes, int]] = []
    for key, value in (("name", name), ("version", version), ("release", release),
                       ("arch", arch)):
        entries.append((TAGS[key], RPM_STRING, value.encode() + b"\0", 1))
    if epoch is not None:
        entries.append((TAGS["epoch"], RPM_INT32, struct.pack(">i", epoch), 1))
    entries.sort(key=lambda e: e[0])
    data, index = b"", []
    for tag, typ, raw, count in entries:
        if typ == RPM_INT32:
            data += b"\0" * (-len(data) % 4)
        index.append((tag, typ, len(data), count))
        data += raw
    il = len(index) + 1
    trailer = struct.pack(">iIiI", 63, RPM_BIN, -16 * il, 16)
    region = (63, RPM_BIN, len(data), 16)
    data += trailer
    out = struct.pack(">II", il, len(data))
    for tag, typ, off, count in [region, *index]:
        out += struct.pack(">iIiI", tag, typ, off, count)
    return out + data


def add_rpmdb(root: Path, packages: list[tuple[str, str]] | dict[str, str],
              extra_blobs: tuple[bytes, ...] = ()) -> Path:
    """var/lib/rpm/rpmdb.sqlite with rpm's schema (Packages and the Name index): one header
    per (name, VERSION-RELEASE); a list may name a package twice (a transaction left half)."""
    items = list(packages.items()) if isinstance(packages, dict) else list(packages)
    items = [("bash", "5.2.15-1.amzn2023.0.2"), ("kernel", "6.1.112-122.189.amzn2023"),
             *items]
    path = root / "var/lib/rpm/rpmdb.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE 'Packages' (hnum INTEGER PRIMARY KEY AUTOINCREMENT,"
                "blob BLOB NOT NULL)")
    con.execute("CREATE TABLE 'Name' (key TEXT NOT NULL, hnum INTEGER NOT NULL, idx INTEGER "
                "NOT NULL, UNIQUE(key,hnum,idx))")
    for name, evr in items:
        version, _, release = evr.partition("-")
        cur = con.execute("INSERT INTO Packages (blob) VALUES (?)",
                          (rpm_header(name, version, release or "1"),))
        con.execute("INSERT INTO Name VALUES (?, ?, 0)", (name, cur.lastrowid))
    for blob in extra_blobs:
        con.execute("INSERT INTO Packages (blob) VALUES (?)", (blob,))
    con.commit()
    con.close()
    return path


# -- dpkg ----------------------------------------------------------------------------------------
def dpkg_stanzas(packages: dict[str, tuple[str, str]]) -> str:
    """{name: (version, Status)}: e.g. ("2.8.4.0", "install ok half-configured")."""
    base = {"base-files": ("13ubuntu10", "install ok installed")}
    return "\n".join(f"Package: {n}\nStatus: {st}\nPriority: optional\nArchitecture: amd64\n"
                     f"Version: {v}\nDescription: {n}\n a package\n"
                     for n, (v, st) in {**base, **packages}.items())


def set_dpkg(root: Path, packages: dict[str, tuple[str, str]]) -> Path:
    p = root / "var/lib/dpkg/status"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dpkg_stanzas(packages))
    return p


# -- kernels and DKMS ----------------------------------------------------------------------------
def add_kernel(root: Path, kernel: str, *, running: bool = True, headers: bool = True,
               module: bool = False, rpm: bool = False) -> Path:
    """lib/modules/KERNEL (with build/ when the headers are there, neuron.ko when DKMS installed
    it); `running` writes proc/sys/kernel/osrelease (how doctor learns it under --root)."""
    mods = root / "lib/modules" / kernel
    mods.mkdir(parents=True, exist_ok=True)
    if headers:
        src = root / ("usr/src/kernels" if rpm else "usr/src") / (
            kernel if rpm else f"linux-headers-{kernel}")
        src.mkdir(parents=True, exist_ok=True)
        (mods / "build").symlink_to(src)
    if module:
        (mods / "updates/dkms").mkdir(parents=True, exist_ok=True)
        (mods / "updates/dkms/neuron.ko").write_bytes(b"\x7fELF")
    if running:
        (root / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
        (root / "proc/sys/kernel/osrelease").write_text(kernel + "\n")
    return mods


def add_dkms(root: Path, version: str, kernels: dict[str, bool] | None = None,
             module: str = "aws-neuronx") -> Path:
    """var/lib/dkms/MODULE/VERSION/source, and per kernel a tree (built: with neuron.ko)."""
    base = root / "var/lib/dkms" / module / version
    (base / "source").mkdir(parents=True, exist_ok=True)
    for k, built in (kernels or {}).items():
        d = base / k / "x86_64"
        d.mkdir(parents=True, exist_ok=True)
        if built:
            (d / "module").mkdir(exist_ok=True)
            (d / "module/neuron.ko").write_bytes(b"\x7fELF")
    return base


# -- limits --------------------------------------------------------------------------------------
def set_limits(root: Path, nofile: tuple[str, str] = ("1024", "1048576"),
               memlock: tuple[str, str] = ("8388608", "8388608")) -> Path:
    """proc/1/limits as the kernel writes it (memlock in bytes)."""
    p = root / "proc/1/limits"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("Limit                     Soft Limit           Hard Limit           Units\n"
                 "Max cpu time              unlimited            unlimited            seconds\n"
                 f"Max open files            {nofile[0]:<20} {nofile[1]:<20} files\n"
                 f"Max locked memory         {memlock[0]:<20} {memlock[1]:<20} bytes\n")
    return p


# -- ELF -----------------------------------------------------------------------------------------
def elf_so(needed: list[str], runpath: str | None = None) -> bytes:
    """A minimal little-endian ELF64 shared object: one PT_LOAD over the file, a PT_DYNAMIC with
    DT_NEEDED (and DT_RUNPATH), DT_STRTAB/DT_STRSZ pointing into it."""
    strtab = b"\0"
    offs = []
    for n in [*needed, *([runpath] if runpath else [])]:
        offs.append(len(strtab))
        strtab += n.encode() + b"\0"
    str_off = 64 + 2 * 56
    dyn_off = str_off + len(strtab) + (-(str_off + len(strtab)) % 8)
    dyn = [(1, o) for o in offs[:len(needed)]]
    if runpath:
        dyn.append((29, offs[-1]))
    dyn += [(5, str_off), (10, len(strtab)), (0, 0)]
    dyn_bytes = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    total = dyn_off + len(dyn_bytes)
    ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
            + struct.pack("<HHIQQQIHHHHHH", 3, 0x3E, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0))
    ph_load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
    ph_dyn = struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dyn_bytes),
                         len(dyn_bytes), 8)
    body = ehdr + ph_load + ph_dyn + strtab
    return body + b"\0" * (dyn_off - len(body)) + dyn_bytes


def add_system_libs(root: Path, names: list[str], multiarch: str = "x86_64-linux-gnu") -> None:
    d = root / "usr/lib" / multiarch
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_bytes(elf_so([]))
