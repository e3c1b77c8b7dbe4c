"""The shared libraries an installed package's extension modules and programs need (ELF
DT_NEEDED, read with the small pure-Python reader below) and which of them nothing on the
library search path provides: what neuronx-cc would fail to load in a slim container image.
Bounded: at most MAX_FILES objects, each read by seek (headers, the dynamic segment, its
strings)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_env.probes.limits import conf_d
from neuron_env.util.record import factory, record

if TYPE_CHECKING:
    from neuron_env.probes.host import Root

MAX_FILES = 600
MAX_WALK = 100_000  # directory entries looked at, at most
MAX_DYN = 1 << 16  # bytes of dynamic entries read
MAX_STR = 1 << 20  # bytes of the dynamic string table read
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 15, 29
SYSTEM_DIRS = ("lib", "lib64", "usr/lib", "usr/lib64", "usr/local/lib")
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}


class _ElfError(ValueError):
    """Not an ELF shared object this reader can follow."""


@record
class ElfNeeds:
    needed: tuple[str, ...] = ()
    search: tuple[str, ...] = ()  # RUNPATH (or RPATH) entries, $ORIGIN kept


def _read(f, off: int, n: int) -> bytes:
    f.seek(off)
    data = f.read(n)
    if len(data) != n:
        raise _ElfError(f"truncated at {off}+{n}")
    return data


def read_needs(path: str | os.PathLike) -> ElfNeeds:
    """DT_NEEDED and RUNPATH/RPATH of one ELF file (32/64-bit, either byte order)."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2):
            raise _ElfError("not an ELF file")
        is64, e = ident[4] == 2, "<" if ident[5] == 1 else ">"
        if is64:
            phoff, = struct.unpack(e + "Q", ident[32:40])
            phentsize, phnum = struct.unpack(e + "HH", ident[54:58])
            ph, word = e + "IIQQQQQQ", e + "qQ"
        else:
            phoff, = struct.unpack(e + "I", ident[28:32])
            phentsize, phnum = struct.unpack(e + "HH", ident[42:46])
            ph, word = e + "IIIIIIII", e + "iI"
        if phnum > 512 or phentsize < struct.calcsize(ph):
            raise _ElfError("implausible program headers")
        loads, dyn = [], None
        for i in range(phnum):
            raw = struct.unpack(ph, _read(f, phoff + i * phentsize, struct.calcsize(ph)))
            if is64:
                typ, off, vaddr, filesz = raw[0], raw[2], raw[3], raw[5]
            else:
                typ, off, vaddr, filesz = raw[0], raw[1], raw[2], raw[4]
            if typ == PT_LOAD:
                loads.append((vaddr, off, filesz))
            elif typ == PT_DYNAMIC:
                dyn = (off, min(filesz, MAX_DYN))
        if dyn is None:
            return ElfNeeds()
        return _dynamic(f, dyn, loads, word)


def _dynamic(f, dyn: tuple[int, int], loads: list, word: str) -> ElfNeeds:
    size = struct.calcsize(word)
    data = _read(f, dyn[0], dyn[1] - dyn[1] % size)
    entries = []
    for i in range(0, len(data), size):
        tag, val = struct.unpack(word, data[i:i + size])
        if tag == DT_NULL:
            break
        entries.append((tag, val))
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    strsz = min(next((v for t, v in entries if t == DT_STRSZ), 0), MAX_STR)
    if strtab is None:
        return ElfNeeds()
    off = next((o + strtab - va for va, o, sz in loads if va <= strtab < va + sz), None)
    if off is None:
        raise _ElfError("string table outside every loaded segment")
    strings = _read(f, off, strsz)

    def s(i: int) -> str:
        end = strings.find(b"\0", i)
        return strings[i:end if end >= 0 else None].decode("utf-8", "replace")

    needed = tuple(s(v) for t, v in entries if t == DT_NEEDED and v < len(strings))
    run = [s(v) for t, v in entries if t == DT_RUNPATH and v < len(strings)]
    rpath = [s(v) for t, v in entries if t == DT_RPATH and v < len(strings)]
    search = tuple(p for entry in (run or rpath) for p in entry.split(":") if p)
    return ElfNeeds(needed, search)


@record
class LibFacts:
    package: str | None = None  # the distribution looked at (neuronx-cc)
    files: int = 0  # shared objects read
    missing: dict[str, tuple[str, ...]] = factory(dict)  # lib -> the objects that need it
    unreadable: int = 0
    capped: bool = False
    search: tuple[str, ...] = ()  # the system directories looked in (under the root)
    error: str | None = None


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _shared_objects(top: Path) -> tuple[list[Path], bool]:
    """The shared objects under top, and the ELF programs in its bin/ folders (neuronx-cc
    runs some of its passes as programs: starfish/bin/walrus_driver). Names are tested as
    strings (a Path per file costs more than the walk); at most MAX_WALK entries are seen."""
    out: list[Path] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        seen += len(filenames)
        in_bin = os.path.basename(dirpath) == "bin"
        for fn in sorted(filenames):
            if fn.endswith(".so") or ".so." in fn or (
                    in_bin and _is_elf(os.path.join(dirpath, fn))):
                out.append(Path(dirpath, fn))
                if len(out) >= MAX_FILES:
                    return out, True
        if seen >= MAX_WALK:
            return out, True
    return out, False


def system_dirs(root: Root, arch: str | None) -> tuple[str, ...]:
    """ld.so's directories under the root: ld.so.conf (and its include dir) then the defaults."""
    dirs: list[str] = []
    for rel in ["etc/ld.so.conf", *conf_d(root, "etc/ld.so.conf.d")]:
        for line in (root.read(rel, limit=64 << 10) or "").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("/") and not line.startswith("include"):
                dirs.append(line.strip("/"))
    multi = MULTIARCH.get(arch or "", "x86_64-linux-gnu")
    dirs += [f"lib/{multi}", f"usr/lib/{multi}", *SYSTEM_DIRS]
    return tuple(dict.fromkeys(dirs))


def _found(lib: str, so: Path, needs: ElfNeeds, own: set[str], system: dict[str, bool],
           where: tuple[Root, tuple[str, ...], tuple[str, ...]]) -> bool:
    """lib through the object's RUNPATH/RPATH ($ORIGIN), the package's own objects, then
    LD_LIBRARY_PATH and the system folders (that answer cached per name: it is the same for
    every object)."""
    if lib in own:
        return True
    for d in needs.search:
        d = d.replace("$ORIGIN", str(so.parent)).replace("${ORIGIN}", str(so.parent))
        if (Path(d) / lib).exists():
            return True
    if lib not in system:
        root, dirs, ld_path = where
        system[lib] = any((Path(d) / lib).exists() for d in ld_path if d) or any(
            root.file(f"{d}/{lib}").exists() for d in dirs)
    return system[lib]


def probe_libs(root: Root, package_dir: str | None, name: str, arch: str | None,
               ld_library_path: str | None = None) -> LibFacts:
    """Which libraries the shared objects under package_dir need that nothing provides."""
    if not package_dir or not Path(package_dir).is_dir():
        return LibFacts(package=name, error="package folder not found")
    sos, capped = _shared_objects(Path(package_dir))
    own = {p.name for p in sos}
    dirs = system_dirs(root, arch)
    ld_path = tuple((ld_library_path or "").split(":"))
    missing: dict[str, list[str]] = {}
    system: dict[str, bool] = {}
    where = (root, dirs, ld_path)
    bad = 0
    for so in sos:
        try:
            needs = read_needs(so)
        except (OSError, _ElfError, struct.error):
            bad += 1
            continue
        for lib in needs.needed:
            if lib in missing or not _found(lib, so, needs, own, system, where):
                missing.setdefault(lib, []).append(so.name)
    return LibFacts(package=name, files=len(sos), unreadable=bad, capped=capped, search=dirs,
                    missing={k: tuple(v[:3]) for k, v in sorted(missing.items())})
