"""The rpm database under a root: Amazon Linux 2023's sqlite `var/lib/rpm/rpmdb.sqlite`, read
here in pure Python (the header blobs parsed by the public format,
https://rpm-software-management.github.io/rpm/manual/format_header.html), and Amazon Linux 2's
Berkeley DB, read through `rpm --root` only when an rpm program is on this host. I/O only, never
raising for a bad host: what could not be read is said in `problem`."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Protocol

from neuron_env.guards.files import FileProblem, resolve_in_root
from neuron_env.util.record import factory, record


class Root(Protocol):
    """probes.host.Root as this module uses it (named here: host.py imports this module)."""

    @property
    def path(self) -> Path: ...

    @property
    def explicit(self) -> bool: ...

    def file(self, rel: str) -> Path: ...

SQLITE = "var/lib/rpm/rpmdb.sqlite"
BDB = "var/lib/rpm/Packages"
SQLITE_MAX = 512 << 20  # a big host's rpmdb.sqlite is 20-60 MB
MAX_ROWS = 200_000
MAX_INDEX = 0xFFFF  # rpm's own caps on a header: entries, data bytes
MAX_DATA = 256 << 20
TAG_NAME, TAG_VERSION, TAG_RELEASE, TAG_EPOCH, TAG_ARCH = 1000, 1001, 1002, 1003, 1022
T_INT32, T_STRING, T_I18NSTRING = 4, 6, 9
PREFIX = "aws-neuron"


@record
class RpmFacts:
    present: bool = False  # an rpm database is there (sqlite or Berkeley DB)
    source: str | None = None  # what was read: the sqlite file or `rpm --root`
    packages: dict[str, tuple[str, ...]] = factory(dict)  # Neuron name -> VERSION-RELEASE each
    problem: str | None = None  # there but not read, and why


class _HeaderError(ValueError):
    """A blob that is not an rpm header (bad counts, offsets out of the data store)."""


def _string(data: bytes, off: int) -> str:
    end = data.find(b"\0", off)
    if off < 0 or off >= len(data) or end < 0:
        raise _HeaderError(f"string at {off} runs out of the data store")
    return data[off:end].decode("utf-8", "replace")


def parse_header(blob: bytes, tags: tuple[int, ...] = (TAG_NAME, TAG_VERSION, TAG_RELEASE,
                                                       TAG_EPOCH, TAG_ARCH)
                 ) -> dict[int, str | int]:
    """The wanted tags of one header blob as stored in rpmdb.sqlite (no lead, no magic: the
    index count, the data length, the 16-byte index entries, the data store; big-endian).
    Strings and the first of an I18N string; INT32 as int. Raises _HeaderError on a bad blob."""
    if len(blob) < 8:
        raise _HeaderError("shorter than a header's two counts")
    il, dl = struct.unpack(">II", blob[:8])
    if il > MAX_INDEX or dl > MAX_DATA or 8 + 16 * il + dl > len(blob):
        raise _HeaderError(f"{il} entries, {dl} data bytes do not fit {len(blob)} bytes")
    data = blob[8 + 16 * il: 8 + 16 * il + dl]
    out: dict[int, str | int] = {}
    for i in range(il):
        tag, typ, off, count = struct.unpack(">iIiI", blob[8 + 16 * i: 24 + 16 * i])
        if tag not in tags or tag in out:
            continue
        if typ in (T_STRING, T_I18NSTRING):
            out[tag] = _string(data, off)
        elif typ == T_INT32 and count >= 1:
            if off < 0 or off + 4 > len(data):
                raise _HeaderError(f"INT32 at {off} runs out of the data store")
            out[tag] = struct.unpack(">i", data[off:off + 4])[0]
    return out


def _evr(h: dict[int, str | int]) -> str:
    ver = f"{h.get(TAG_VERSION, '?')}-{h.get(TAG_RELEASE, '?')}"
    return f"{h[TAG_EPOCH]}:{ver}" if isinstance(h.get(TAG_EPOCH), int) and h[TAG_EPOCH] else ver


def read_sqlite(path: Path, prefix: str = PREFIX) -> tuple[dict[str, tuple[str, ...]], int]:
    """{name: (version-release, ...)} of the packages named prefix*, and the count of blobs that
    were not headers. Opened read-only and immutable (no journal written next to it)."""
    import sqlite3

    found: dict[str, list[str]] = {}
    bad = 0
    con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        con.execute("PRAGMA trusted_schema=OFF")
        rows = con.execute("SELECT blob FROM Packages LIMIT ?", (MAX_ROWS,))
        for (blob,) in rows:
            try:
                h = parse_header(bytes(blob))
            except (_HeaderError, TypeError):
                bad += 1
                continue
            name = h.get(TAG_NAME)
            if isinstance(name, str) and name.startswith(prefix):
                found.setdefault(name, []).append(_evr(h))
    finally:
        con.close()
    return {k: tuple(v) for k, v in found.items()}, bad


def _sqlite_facts(root: Root) -> RpmFacts:
    try:
        path = resolve_in_root(root.path, SQLITE) if root.explicit else root.file(SQLITE)
        st = path.stat()
    except (FileProblem, OSError) as e:
        return RpmFacts(present=True, source=SQLITE, problem=f"{SQLITE}: {e}: not read")
    if st.st_size > SQLITE_MAX:
        return RpmFacts(present=True, source=SQLITE,
                        problem=f"{SQLITE} is too large ({st.st_size} bytes, cap {SQLITE_MAX})")
    try:
        packages, bad = read_sqlite(path)
    except Exception as e:  # sqlite3.Error and whatever a damaged file raises: said, not raised
        return RpmFacts(present=True, source=SQLITE,
                        problem=f"{SQLITE} could not be read as an rpm database ({e})")
    note = f"{bad} entries were not rpm headers" if bad else None
    return RpmFacts(present=True, source=SQLITE, packages=packages, problem=note)


def _bdb_facts(root: Root, rpm: str | None) -> RpmFacts:
    """Amazon Linux 2: a Berkeley DB only rpm reads; through `rpm --root` when there is one."""
    if rpm is None:
        return RpmFacts(present=True, source=BDB,
                        problem=f"{BDB} is a Berkeley DB rpm database (Amazon Linux 2) and there "
                                "is no rpm program here to read it: rpm package states not read")
    from neuron_env.guards import proc

    argv = [rpm, "--root", str(root.path), "--dbpath", "/var/lib/rpm", "-qa", "--qf",
            r"%{NAME}\t%{VERSION}-%{RELEASE}\n", PREFIX + "*"]
    done = proc.run(argv, timeout=15)
    if done.returncode not in (0, 1) or done.timed_out:
        return RpmFacts(present=True, source="rpm --root",
                        problem=f"rpm --root could not read {BDB} (exit {done.returncode}): "
                                "rpm package states not read")
    found: dict[str, list[str]] = {}
    for line in done.stdout.splitlines()[:10_000]:
        name, _, ver = line.partition("\t")
        if name.startswith(PREFIX) and ver:
            found.setdefault(name, []).append(ver.strip())
    return RpmFacts(present=True, source="rpm --root",
                    packages={k: tuple(v) for k, v in found.items()})


def probe_rpm(root: Root, rpm: str | None = None, look_for_rpm: bool = True) -> RpmFacts:
    """The Neuron packages in the rpm database under the root; RpmFacts() where there is none."""
    if root.file(SQLITE).exists():
        return _sqlite_facts(root)
    if root.file(BDB).exists():
        return _bdb_facts(root, rpm or (shutil.which("rpm") if look_for_rpm else None))
    return RpmFacts()
