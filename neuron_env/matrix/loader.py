"""Read and fully validate matrix TOML files into `Matrix` objects.

Every problem is collected (not just the first) and located: file, key path and, where it can be
found, the line. Only `MatrixError` ever leaves this module for bad input.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from neuron_env.errors import MatrixError, Problem
from neuron_env.guards.files import FileProblem, read_bounded
from neuron_env.matrix.model import (
    BACKEND_KINDS,
    FORMAT_VERSION,
    OS_STATUSES,
    RELEASE_STATUSES,
    AptPackage,
    Companion,
    Driver,
    Index,
    InstanceFamily,
    InstanceType,
    Limitation,
    Matrix,
    OSEntry,
    Pair,
    Placeholder,
    Source,
    StackPackage,
    TorchCompanion,
    release_ok,
)
from neuron_env.matrix.references import source_ref_problems
from neuron_env.util.names import canonicalize_name
from neuron_env.util.versions import Spec, Ver

_Table = dict[str, Any]  # a TOML table as tomllib gives it

_TOML_LINE = r"at line (\d+)"  # compiled on first use (a TOML error)
MAX_MATRIX = 4 << 20  # a matrix is a few KiB; /dev/zero or a 10 GB file is not one
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class _Reader:
    """Typed accessors that record problems instead of raising."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.lines = text.splitlines()
        self.problems: list[Problem] = []

    # -- locating -------------------------------------------------------------------------------
    def _line(self, path: str) -> int | None:
        """Best effort: the line of the last key of `path` after its table header."""
        parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        if not parts:
            return None
        start = 0
        header: list[str] = []
        for part in parts[:-1]:
            if part.startswith("["):
                idx = int(part[1:-1])
                name = ".".join(header)
                hits = [
                    i for i, ln in enumerate(self.lines) if ln.strip() == f"[[{name}]]"
                ]
                if idx < len(hits):
                    start = hits[idx]
                    continue
                # an inline array of tables: the idx-th "{ ... }" line after `key = [`
                key_re = re.compile(rf"^\s*{re.escape(header[-1])}\s*=")
                at = next((i for i in range(start, len(self.lines))
                           if key_re.match(self.lines[i])), None)
                if at is None:
                    return None
                items = [i for i in range(at, len(self.lines)) if "{" in self.lines[i]]
                if idx >= len(items):
                    return at + 1
                start = items[idx]
                header = []
                continue
            header.append(part)
        key = parts[-1]
        if key.startswith("["):
            return start + 1 if start else None
        pat = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=|[{{,]\s*{re.escape(key)}\s*=")
        for i in range(start, len(self.lines)):
            if pat.search(self.lines[i]):
                return i + 1
        table = ".".join([*header, key])
        for i, ln in enumerate(self.lines):
            if ln.strip() in (f"[{table}]", f"[[{table}]]"):
                return i + 1
        return start + 1 if start else None

    def bad(self, path: str, message: str) -> None:
        self.problems.append(Problem(self.file, path, message, self._line(path)))

    # -- structure ------------------------------------------------------------------------------
    def keys(self, d: _Table, path: str, required: set[str], optional: set[str]) -> None:
        for k in sorted(set(d) - required - optional):
            allowed = ", ".join(sorted(required | optional))
            self.bad(_join(path, k), f"unknown key {k!r}; allowed here: {allowed}")
        for k in sorted(required - set(d)):
            self.bad(_join(path, k), f"required key {k!r} is missing")

    def table(self, d: _Table, key: str, path: str, required: bool = True) -> _Table:
        v = d.get(key)
        if v is None:
            if required and key in d:
                self.bad(_join(path, key), "expected a table")
            return {}
        if not isinstance(v, dict):
            self.bad(_join(path, key), f"expected a table, got {_kind(v)}")
            return {}
        return v

    def tables(self, d: _Table, key: str, path: str, required: bool = False) -> list[_Table]:
        v = d.get(key)
        if v is None:
            return []
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            self.bad(_join(path, key), f"expected an array of tables ([[{key}]]), got {_kind(v)}")
            return []
        if required and not v:
            self.bad(_join(path, key), f"at least one [[{key}]] entry is required")
        return v

    # -- scalars --------------------------------------------------------------------------------
    def str_(self, d: _Table, key: str, path: str, choices: tuple[str, ...] | None = None,
             name_like: bool = False) -> str | None:
        if key not in d:
            return None
        v = d[key]
        p = _join(path, key)
        if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime) and key == "date":
            return v.isoformat()
        if not isinstance(v, str):
            self.bad(p, f"expected a string, got {_kind(v)}")
            return None
        if not v.strip():
            self.bad(p, "must not be empty")
            return None
        if choices and v not in choices:
            self.bad(p, f"expected one of {', '.join(choices)}, got {v!r}")
            return None
        if name_like and not _NAME.match(v):
            self.bad(p, f"{v!r} is not a valid name (letters, digits, '.', '_', '-')")
            return None
        return v

    def int_(self, d: _Table, key: str, path: str) -> int | None:
        if key not in d:
            return None
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            self.bad(_join(path, key), f"expected a non-negative integer, got {v!r}")
            return None
        return v

    def bool_(self, d: _Table, key: str, path: str, default: bool | None = None) -> bool | None:
        if key not in d:
            return default
        v = d[key]
        if not isinstance(v, bool):
            self.bad(_join(path, key), f"expected true or false, got {v!r}")
            return default
        return v

    def strs(self, d: _Table, key: str, path: str, nonempty: bool = False) -> tuple[str, ...]:
        if key not in d:
            return ()
        v = d[key]
        p = _join(path, key)
        if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
            self.bad(p, f"expected a list of non-empty strings, got {v!r}")
            return ()
        if nonempty and not v:
            self.bad(p, "must list at least one entry")
        return tuple(v)

    def version(self, d: _Table, key: str, path: str) -> Ver | None:
        s = self.str_(d, key, path)
        if s is None:
            return None
        try:
            return Ver(s)
        except ValueError:
            self.bad(_join(path, key), f"{s!r} is not a valid PEP 440 version (e.g. '2.14.0')")
            return None

    def spec(self, d: _Table, key: str, path: str, allow_empty: bool = False) -> Spec | None:
        if key not in d:
            return None
        v = d[key]
        p = _join(path, key)
        if not isinstance(v, str):
            self.bad(p, f"expected a PEP 440 specifier string, got {_kind(v)}")
            return None
        if not v.strip() and not allow_empty:
            self.bad(p, "must not be empty (write a specifier such as '>=3.12,<3.15')")
            return None
        try:
            return Spec(v)
        except ValueError:
            self.bad(p, f"{v!r} is not a valid PEP 440 specifier (e.g. '>=3.12,<3.15', '==2.*')")
            return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(v: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a float"}.get(type(v), type(v).__name__)


# -- sections ---------------------------------------------------------------------------------
TOP_REQUIRED = {"format", "release", "status", "backend", "summary", "architectures",
                "python", "instances", "os", "pairs", "indexes"}
TOP_OPTIONAL = {"date", "companions", "placeholders", "limitations", "driver", "docs", "dlami",
                "sources", "torch_companions", "stack"}


def _parse(r: _Reader, data: _Table, source: str, bundled: bool) -> Matrix | None:
    r.keys(data, "", TOP_REQUIRED, TOP_OPTIONAL)
    fmt = data.get("format")
    if "format" in data and fmt != FORMAT_VERSION:
        r.bad("format", f"unsupported matrix format {fmt!r}; this neuron-env reads format "
              f"{FORMAT_VERSION} (upgrade neuron-env for newer matrices)")
    release = r.str_(data, "release", "")
    if release is not None:
        try:
            if not release_ok(release):  # the catalog's file-name grammar, nothing wider
                raise ValueError(release)
            Ver(release)
        except ValueError:
            r.bad("release", f"{release!r} is not a release number such as '2.33' or '2.31.1'")
            release = None
    date = r.str_(data, "date", "")
    if date is not None:
        try:
            _dt.date.fromisoformat(date)
        except ValueError:
            r.bad("date", f"{date!r} is not a date in YYYY-MM-DD form")
    status = r.str_(data, "status", "", RELEASE_STATUSES)
    backend = r.str_(data, "backend", "", BACKEND_KINDS)
    summary = r.str_(data, "summary", "")
    archs = r.strs(data, "architectures", "", nonempty="architectures" in data)

    py = r.table(data, "python", "")
    r.keys(py, "python", {"requires"}, set()) if "python" in data else None
    python = r.spec(py, "requires", "python")

    instances = _instances(r, data)
    oses = _oses(r, data)
    pairs = _pairs(r, data, python)
    companions = _companions(r, data)
    torch_companions = _torch_companions(r, data)
    stack = _stack(r, data)
    indexes = _indexes(r, data)
    placeholders = _placeholders(r, data)
    limitations = _limitations(r, data)
    driver = _driver(r, data)
    docs = _str_table(r, data, "docs")
    dlami = _str_table(r, data, "dlami")
    sources = _sources(r, data)
    for path, message in source_ref_problems(sources, instances, oses, driver):
        r.bad(path, message)  # reported with the structural problems
    _check_companion_refs(r, sources, torch_companions)

    if (r.problems or release is None or status is None or backend is None or summary is None
            or python is None):  # each of them None is one of the problems
        return None
    return Matrix(
        release=release, date=date, status=status, backend=backend, summary=summary,
        python=python, architectures=archs, instances=instances, os=oses, pairs=pairs,
        companions=companions, indexes=indexes, placeholders=placeholders,
        limitations=limitations, driver=driver, docs=docs, dlami=dlami, source=source,
        bundled=bundled, sources=sources, torch_companions=torch_companions, stack=stack,
    )


def _instances(r: _Reader, data: _Table) -> tuple[InstanceFamily, ...]:
    out, seen = [], set()
    for i, d in enumerate(r.tables(data, "instances", "", required="instances" in data)):
        p = f"instances[{i}]"
        r.keys(d, p, {"family", "supported"}, {"accelerator", "reason", "types"})
        fam = r.str_(d, "family", p, name_like=True)
        supported = r.bool_(d, "supported", p)
        reason = r.str_(d, "reason", p)
        if supported is False and reason is None and "reason" not in d:
            r.bad(_join(p, "reason"), "an unsupported family needs a 'reason' to show users")
        if fam in seen:
            r.bad(_join(p, "family"), f"duplicate instance family {fam!r}")
        seen.add(fam)
        types = []
        raw = d.get("types", [])
        if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
            r.bad(_join(p, "types"), "expected an array of inline tables {name = ..., ...}")
            raw = []
        for j, t in enumerate(raw):
            tp = f"{p}.types[{j}]"
            r.keys(t, tp, {"name"}, {"devices", "cores_per_device", "memory_per_device_gib",
                                     "confirmed", "lnc_default", "efa", "source"})
            name = r.str_(t, "name", tp, name_like=True)
            if name and fam and not name.startswith(fam + "."):
                r.bad(_join(tp, "name"), f"{name!r} does not belong to family {fam!r}")
            types.append(InstanceType(
                name=name or "", devices=r.int_(t, "devices", tp),
                cores_per_device=r.int_(t, "cores_per_device", tp),
                memory_per_device_gib=r.int_(t, "memory_per_device_gib", tp),
                confirmed=bool(r.bool_(t, "confirmed", tp, True)),
                lnc_default=r.int_(t, "lnc_default", tp), efa=r.bool_(t, "efa", tp),
                source=r.str_(t, "source", tp),
            ))
        out.append(InstanceFamily(family=fam or "", supported=bool(supported),
                                  accelerator=r.str_(d, "accelerator", p), reason=reason,
                                  types=tuple(types)))
    if out and not any(f.supported for f in out):
        r.bad("instances", "no instance family is marked supported")
    return tuple(out)


def _oses(r: _Reader, data: _Table) -> tuple[OSEntry, ...]:
    out, seen = [], set()
    for i, d in enumerate(r.tables(data, "os", "", required="os" in data)):
        p = f"os[{i}]"
        r.keys(d, p, {"id", "version", "status"}, {"codename", "wheels", "message", *OS_EXTRA})
        e = OSEntry(id=r.str_(d, "id", p, name_like=True) or "",
                    version=r.str_(d, "version", p) or "",
                    status=r.str_(d, "status", p, OS_STATUSES) or "",
                    codename=r.str_(d, "codename", p), wheels=r.bool_(d, "wheels", p),
                    message=r.str_(d, "message", p), **_os_extra(r, d, p))
        if e.status in ("end-of-support", "unsupported") and not e.message:
            r.bad(_join(p, "message"), f"an OS with status {e.status!r} needs a 'message'")
        if (e.id, e.version) in seen:
            r.bad(p, f"duplicate OS entry {e.id} {e.version}")
        seen.add((e.id, e.version))
        out.append(e)
    return tuple(out)


def _pairs(r: _Reader, data: _Table, python: Spec | None) -> tuple[Pair, ...]:
    out, seen = [], set()
    for i, d in enumerate(r.tables(data, "pairs", "", required="pairs" in data)):
        p = f"pairs[{i}]"
        r.keys(d, p, {"torch", "torch_neuronx"}, {"python", "note"})
        torch = r.version(d, "torch", p)
        nx = r.spec(d, "torch_neuronx", p)
        if nx is not None and not any(s.operator in ("==", "===", "~=") for s in nx):
            r.bad(_join(p, "torch_neuronx"),
                  f"{nx!s} does not pin a family; write e.g. '==2.14.3.0.*'")
        py, note = r.spec(d, "python", p), r.str_(d, "note", p)
        if torch is not None:
            if torch in seen:
                r.bad(_join(p, "torch"), f"duplicate pair for torch {torch}")
            seen.add(torch)
        if torch is not None and nx is not None:  # else a problem already: no matrix is built
            out.append(Pair(torch=torch, torch_neuronx=nx, python=py, note=note))
    return tuple(out)


def _companions(r: _Reader, data: _Table) -> tuple[Companion, ...]:
    out = []
    for i, d in enumerate(r.tables(data, "companions", "")):
        p = f"companions[{i}]"
        r.keys(d, p, {"name"}, {"spec", "purpose"})
        spec = r.spec(d, "spec", p, allow_empty=True) if "spec" in d else Spec()
        out.append(Companion(name=r.str_(d, "name", p, name_like=True) or "",
                             spec=spec or Spec(), purpose=r.str_(d, "purpose", p)))
    return tuple(out)


_TORCH_MINOR = re.compile(r"^\d+\.\d+$")


_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _torch_companions(r: _Reader, data: _Table) -> tuple[TorchCompanion, ...]:
    """[[torch_companions]]: one row per (package, torch minor); each row names its `source`
    or says why it is `assumed` (exactly one of them)."""
    out, seen = [], set()
    for i, d in enumerate(r.tables(data, "torch_companions", "")):
        p = f"torch_companions[{i}]"
        r.keys(d, p, {"name", "torch", "spec"},
               {"source", "assumed", "families", "torch_neuronx", "conflicts", "provides"})
        name = r.str_(d, "name", p, name_like=True) or ""
        torch = r.str_(d, "torch", p) or ""
        if torch and not _TORCH_MINOR.match(torch):
            r.bad(_join(p, "torch"), f"{torch!r} is not a torch minor such as '2.14'")
        spec = r.spec(d, "spec", p)
        source, assumed = r.str_(d, "source", p), r.str_(d, "assumed", p)
        if (source is None) == (assumed is None) and "name" in d:
            r.bad(p, "give exactly one of 'source' (the [[sources]] id of the page that states "
                  "the pairing) and 'assumed' (why it is assumed)")
        key = (canonicalize_name(name), torch)
        if name and torch and key in seen:
            r.bad(_join(p, "torch"), f"duplicate pairing of {name} for torch {torch}")
        seen.add(key)
        nx = r.spec(d, "torch_neuronx", p) if "torch_neuronx" in d else None
        provides = r.str_(d, "provides", p)
        if provides is not None and not _MODULE.match(provides):
            r.bad(_join(p, "provides"), f"{provides!r} is not a Python module name")
        out.append(TorchCompanion(name, torch, spec or Spec(), source, assumed,
                                  families=r.strs(d, "families", p),
                                  torch_neuronx=nx, conflicts=r.strs(d, "conflicts", p),
                                  provides=provides))
    return tuple(out)


def _check_companion_refs(r: _Reader, sources: tuple[Source, ...],
                          rows: tuple[TorchCompanion, ...]) -> None:
    ids = {s.id for s in sources}
    for i, c in enumerate(rows):
        if c.source and c.source not in ids:
            r.bad(f"torch_companions[{i}].source", f"source {c.source!r} is not declared in "
                  f"[[sources]] (declared: {', '.join(sorted(ids)) or 'none'})")


def _indexes(r: _Reader, data: _Table) -> tuple[Index, ...]:
    out: list[Index] = []
    owner: dict[str, str] = {}
    for i, d in enumerate(r.tables(data, "indexes", "", required="indexes" in data)):
        p = f"indexes[{i}]"
        r.keys(d, p, {"name", "url", "packages"}, {"env"})
        url = r.str_(d, "url", p)
        if url and not re.match(r"^(https?|file)://", url):
            r.bad(_join(p, "url"), f"{url!r} is not an http(s):// or file:// URL")
        name = r.str_(d, "name", p, name_like=True) or ""
        pkgs = r.strs(d, "packages", p, nonempty="packages" in d)
        for pkg in pkgs:
            key = canonicalize_name(pkg)
            if key in owner:
                r.bad(_join(p, "packages"),
                      f"package {pkg!r} is already assigned to index {owner[key]!r}")
            owner[key] = name
        out.append(Index(name=name, url=url or "", packages=pkgs, env=r.str_(d, "env", p)))
    return tuple(out)


def _placeholders(r: _Reader, data: _Table) -> tuple[Placeholder, ...]:
    out = []
    for i, d in enumerate(r.tables(data, "placeholders", "")):
        p = f"placeholders[{i}]"
        r.keys(d, p, {"name", "version"}, set())
        name, version = r.str_(d, "name", p, name_like=True) or "", r.version(d, "version", p)
        if version is not None:  # None: a problem already, the matrix is not built
            out.append(Placeholder(name=name, version=version))
    return tuple(out)


def _limitations(r: _Reader, data: _Table) -> tuple[Limitation, ...]:
    out = []
    for i, d in enumerate(r.tables(data, "limitations", "")):
        p = f"limitations[{i}]"
        r.keys(d, p, {"id", "summary"}, set())
        out.append(Limitation(id=r.str_(d, "id", p) or "", summary=r.str_(d, "summary", p) or ""))
    return tuple(out)


def _driver(r: _Reader, data: _Table) -> Driver:
    if "driver" not in data:
        return Driver()
    d = r.table(data, "driver", "")
    r.keys(d, "driver", set(), {"module", "min_version", "pci_vendor", "apt"})
    apt = []
    for i, a in enumerate(r.tables(d, "apt", "driver")):
        p = f"driver.apt[{i}]"
        r.keys(a, p, {"name"}, {"version", "purpose", "confirmed", "source", "families"})
        apt.append(AptPackage(name=r.str_(a, "name", p, name_like=True) or "",
                              version=r.str_(a, "version", p), purpose=r.str_(a, "purpose", p),
                              confirmed=bool(r.bool_(a, "confirmed", p, True)),
                              source=r.str_(a, "source", p), families=r.strs(a, "families", p)))
    _check_family_rows(r, apt)
    return Driver(module=r.str_(d, "module", "driver") or "neuron",
                  min_version=r.str_(d, "min_version", "driver"),
                  pci_vendor=r.str_(d, "pci_vendor", "driver"), apt=tuple(apt))


def _check_family_rows(r: _Reader, apt: list[AptPackage]) -> None:
    """A package listed twice must say which instance families each row is for, and no family
    may be claimed by two rows of one package."""
    claimed: dict[tuple[str, str], int] = {}
    names = [a.name for a in apt]
    for i, a in enumerate(apt):
        if names.count(a.name) > 1 and not a.families:
            r.bad(f"driver.apt[{i}].families", f"{a.name} is listed more than once: each row "
                  "needs 'families' (the instance families it is for)")
        for fam in a.families:
            if (a.name, fam) in claimed:
                r.bad(f"driver.apt[{i}].families", f"{a.name} for {fam} is already given by "
                      f"driver.apt[{claimed[(a.name, fam)]}]")
            claimed[(a.name, fam)] = i


def _stack(r: _Reader, data: _Table) -> tuple[StackPackage, ...]:
    """[[stack]]: the exact versions of the release's own Python packages."""
    out, seen = [], set()
    for i, d in enumerate(r.tables(data, "stack", "")):
        p = f"stack[{i}]"
        r.keys(d, p, {"name", "version"}, {"torch", "required", "families", "purpose"})
        name = r.str_(d, "name", p, name_like=True) or ""
        version = r.version(d, "version", p)
        torch = r.str_(d, "torch", p)
        if torch and not _TORCH_MINOR.match(torch):
            r.bad(_join(p, "torch"), f"{torch!r} is not a torch minor such as '2.14'")
        key = (canonicalize_name(name), str(version), torch)
        if name and key in seen:
            r.bad(p, f"duplicate [[stack]] row for {name} {version}")
        seen.add(key)
        if version is not None:
            out.append(StackPackage(name, str(d["version"]), torch,
                                    bool(r.bool_(d, "required", p, False)),
                                    r.strs(d, "families", p), r.str_(d, "purpose", p)))
    return tuple(out)


def _str_table(r: _Reader, data: _Table, key: str) -> tuple[tuple[str, str], ...]:
    t = r.table(data, key, "", required=False)
    out = []
    for k, v in t.items():
        if not isinstance(v, str) or not v.strip():
            r.bad(f"{key}.{k}", f"expected a non-empty string, got {v!r}")
        else:
            out.append((k, v))
    return tuple(out)


# -- sources: every fact says where it comes from ---------------------------------------------
OS_EXTRA = ("build_from_source", "new_dlamis", "source", "disputed_status", "disputed_source",
            "default_python")
SECTIONS = ("python", "instances", "os", "pairs", "companions", "torch_companions", "indexes",
            "placeholders", "limitations", "driver", "docs", "dlami", "date", "status", "stack")
MUST_COVER = ("python", "instances", "os", "pairs", "companions", "driver", "dlami", "stack")


def _os_extra(r: _Reader, d: _Table, p: str) -> _Table:
    out = {"build_from_source": r.bool_(d, "build_from_source", p),
           "new_dlamis": r.bool_(d, "new_dlamis", p), "source": r.str_(d, "source", p),
           "disputed_status": r.str_(d, "disputed_status", p, OS_STATUSES),
           "disputed_source": r.str_(d, "disputed_source", p),
           "default_python": r.str_(d, "default_python", p)}
    if out["disputed_status"] and not out["disputed_source"]:
        r.bad(_join(p, "disputed_source"), "a disputed status needs the source that says it")
    return out


def _sources(r: _Reader, data: _Table) -> tuple[Source, ...]:
    raw = r.tables(data, "sources", "")
    if not raw and "sources" not in data:
        r.bad("sources", "the matrix names no [[sources]]: every fact needs the page or "
              "manifest it comes from (id, url, covers); see matrices/FORMAT.md")
        return ()
    out, seen = [], set()
    for i, d in enumerate(raw):
        p = f"sources[{i}]"
        r.keys(d, p, {"id", "url", "covers"}, {"title", "note"})
        id_ = r.str_(d, "id", p, name_like=True) or ""
        url = r.str_(d, "url", p) or ""
        if url and not url.startswith("https://"):
            r.bad(_join(p, "url"), f"{url!r} is not an https:// URL")
        if id_ in seen:
            r.bad(_join(p, "id"), f"duplicate source id {id_!r}")
        seen.add(id_)
        covers = r.strs(d, "covers", p, nonempty="covers" in d)
        for c in covers:
            if c != "*" and c.split(".", 1)[0] not in SECTIONS:
                r.bad(_join(p, "covers"), f"{c!r} names no section of the matrix "
                      f"(one of {', '.join(SECTIONS)}, a fact below one such as "
                      "'instances.trn2n', or '*')")
        out.append(Source(id_, url, r.str_(d, "title", p), covers, r.str_(d, "note", p)))
    present = [k for k in MUST_COVER if k in data]
    for k in present:
        if not any(c == "*" or c == k or c.startswith(k + ".") for s in out for c in s.covers):
            r.bad("sources", f"no source covers [{k}]: add it to a source's 'covers'")
    return tuple(out)


# -- entry points -----------------------------------------------------------------------------
def toml() -> ModuleType:
    """The project's one TOML reader (tomllib, or tomli before 3.11), imported when a file is
    parsed: a cached matrix never needs it."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    reader: ModuleType = tomllib
    return reader


def parse_text(text: str, source: str = "<string>", bundled: bool = False,
               remember: bool = False) -> Matrix:
    """Parse and validate one document; raise MatrixError with every problem found.
    `remember`: keep the parse of a valid document in the cache (matrix/cache.py)."""
    if not text.strip():
        raise MatrixError([Problem(source, "", "the file is empty; a matrix needs at least "
                                   "'format', 'release' and the tables described in "
                                   "matrices/FORMAT.md")])
    tomllib = toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(_TOML_LINE, str(e))
        raise MatrixError([Problem(source, "", f"not valid TOML: {e}",
                                   int(m.group(1)) if m else None)]) from None
    except RecursionError:
        raise MatrixError([Problem(source, "", "nested too deeply to be a matrix (arrays or "
                                   "tables inside each other thousands of levels down)")]) from None
    r = _Reader(source, text)
    matrix = _parse(r, data, source, bundled)
    if matrix is not None:
        _semantic_problems(r, matrix)
    if r.problems or matrix is None:
        raise MatrixError(r.problems)
    if remember:
        from neuron_env.matrix import cache

        cache.put(source, text, data)
    return matrix


def _from_cache(text: str, source: str, bundled: bool) -> Matrix | None:
    """The matrix from the cached parse of this very text (checked when it was kept)."""
    from neuron_env.matrix import cache

    data = cache.get(source, text)
    if data is None:
        return None
    r = _Reader(source, text)
    matrix = _parse(r, data, source, bundled)
    return None if r.problems else matrix


def load_file(path: Path, bundled: bool = False) -> Matrix:
    try:
        raw = read_bounded(path, MAX_MATRIX)
    except FileProblem as e:
        why = "is a directory, not a matrix file" if "a directory" in e.why else e.why
        raise MatrixError([Problem(str(path), "", why)]) from None
    except FileNotFoundError:
        raise MatrixError([Problem(str(path), "", "no such file")]) from None
    except OSError as e:
        raise MatrixError([Problem(str(path), "", f"cannot be read: {e.strerror or e}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MatrixError([Problem(str(path), "", f"is not UTF-8 text ({e.reason} at byte "
                                   f"{e.start})")]) from None
    return (_from_cache(text, str(path), bundled)
            or parse_text(text, str(path), bundled, remember=True))


def _semantic_problems(r: _Reader, m: Matrix) -> None:
    """Contradictions that each field alone cannot show (matrix/semantics.py)."""
    from neuron_env.matrix.semantics import semantic_problems

    for path, message in semantic_problems(m, r.file):
        r.bad(path, message)
