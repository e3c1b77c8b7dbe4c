"""The rules of one Neuron release, loaded from data (`rules/neuron-<release>.toml`) and indexed
for the analyzers. Pure: no file walking, no AST here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from neuron_env.errors import ConfigurationError, UsageError

RULES_DIR = Path(__file__).resolve().parent / "rules"
SEVERITIES = ("info", "warning", "error")  # least to most severe
CONDITIONS = ("equals", "not_in", "prefix", "builtin", "missing")


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str
    message: str
    replacement: str
    docs: str
    fix: str | None = None
    fix_from: str | None = None
    fix_to: str | None = None

    def serialize(self) -> dict[str, Any]:
        return {"id": self.id, "severity": self.severity, "summary": self.summary,
                "message": self.message, "replacement": self.replacement, "docs": self.docs,
                "fixable": self.fix is not None}


@dataclass(frozen=True)
class CallCond:
    rule: str
    arg: str
    position: int | None
    kind: str  # one of CONDITIONS
    values: tuple[str, ...] = ()


@dataclass
class Ruleset:
    release: str
    source: str
    rules: dict[str, Rule]
    imports: dict[str, str] = field(default_factory=dict)       # module prefix -> rule
    names: dict[str, str] = field(default_factory=dict)         # exact qualified name -> rule
    prefixes: dict[str, str] = field(default_factory=dict)      # "a.b" of "a.b.*" -> rule
    calls: dict[str, list[CallCond]] = field(default_factory=dict)
    methods: dict[str, list[tuple[str, int | None]]] = field(default_factory=dict)
    devices: list[tuple[re.Pattern[str], str]] = field(default_factory=list)
    env_exact: dict[str, str] = field(default_factory=dict)
    env_prefix: dict[str, str] = field(default_factory=dict)
    commands: dict[str, str] = field(default_factory=dict)
    path: str = ""

    @cached_property
    def roots(self) -> frozenset[str]:
        """The first names of every qualified name a rule matches, and `os` (environment)."""
        return frozenset({p.split(".")[0] for p in (*self.names, *self.prefixes, *self.calls)}
                         | {"os"})

    # -- lookups (longest pattern wins) ------------------------------------------------------
    def match_name(self, qname: str) -> str | None:
        hit = self.names.get(qname)
        if hit is not None:
            return hit
        parts = qname.split(".")
        for k in range(len(parts), 0, -1):
            hit = self.prefixes.get(".".join(parts[:k]))
            if hit is not None:
                return hit
        return None

    def covers(self, qname: str) -> bool:
        """True when qname or something below it can match a name rule (alias tracking)."""
        if self.match_name(qname):
            return True
        dotted = qname + "."
        return any(p.startswith(dotted) for p in (*self.names, *self.prefixes, *self.calls))

    def match_import(self, module: str) -> str | None:
        parts = module.split(".")
        for k in range(len(parts), 0, -1):
            hit = self.imports.get(".".join(parts[:k]))
            if hit is not None:
                return hit
        return None

    def match_env(self, name: str) -> str | None:
        hit = self.env_exact.get(name)
        if hit is not None:
            return hit
        best = max((p for p in self.env_prefix if name.startswith(p)), key=len, default=None)
        return None if best is None else self.env_prefix[best]

    def match_device(self, s: str) -> str | None:
        for rx, rule in self.devices:
            if rx.fullmatch(s):
                return rule
        return None


def available() -> dict[str, Path]:
    return {p.stem.removeprefix("neuron-"): p for p in sorted(RULES_DIR.glob("neuron-*.toml"))}


def _release_key(r: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", r))


def locate(matrix: str | None) -> Path:
    """--matrix: a release with bundled rules (2.33, 2.33.1 -> 2.33) or a rules TOML file."""
    have = available()
    if not matrix:
        return have[max(have, key=_release_key)]
    if matrix in have:
        return have[matrix]
    short = ".".join(matrix.split(".")[:2])
    if short in have:
        return have[short]
    p = Path(matrix)
    if p.is_file():
        return p
    raise UsageError(f"--matrix {matrix!r}: no scan rules for that release",
                     hint=f"bundled rule sets: {', '.join(sorted(have))}; or give a rules "
                          "TOML file (format: neuron_env/scan/rules/FORMAT.md)")


def load(path: Path) -> Ruleset:
    from neuron_env.matrix.loader import toml  # the project's one TOML reader

    tomllib = toml()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigurationError(f"scan rules {path}: {e}",
                                 hint="check the file against neuron_env/scan/rules/FORMAT.md"
                                 ) from None
    try:
        return _build(data, str(path))
    except (KeyError, TypeError, ValueError, re.error) as e:
        raise ConfigurationError(f"scan rules {path}: invalid ({type(e).__name__}: {e})",
                                 hint="check the file against neuron_env/scan/rules/FORMAT.md"
                                 ) from None


def _build(data: dict[str, Any], path: str) -> Ruleset:
    docs = data.get("docs", {})
    rs = Ruleset(release=str(data["release"]), source=str(data.get("source", "")), rules={},
                 path=path)
    for raw in data["rule"]:
        rid = raw["id"]
        if rid in rs.rules:
            raise ValueError(f"rule {rid} declared twice")
        if raw["severity"] not in SEVERITIES:
            raise ValueError(f"rule {rid}: severity {raw['severity']!r} not in {SEVERITIES}")
        rs.rules[rid] = Rule(rid, raw["severity"], raw["summary"], raw["message"],
                             raw["replacement"], docs.get(raw["docs"], raw["docs"]),
                             raw.get("fix"), raw.get("fix_from"), raw.get("fix_to"))
        for m in raw.get("match", []):
            _index(rs, rid, m)
    return rs


def _index(rs: Ruleset, rid: str, m: dict[str, Any]) -> None:
    for mod in m.get("import", []):
        rs.imports[mod] = rid
    for cmd in m.get("command", []):
        rs.commands[cmd] = rid
    for env in m.get("env", []):
        (rs.env_prefix.__setitem__(env[:-1], rid) if env.endswith("*")
         else rs.env_exact.__setitem__(env, rid))
    for dev in m.get("device", []):
        rs.devices.append((re.compile(re.escape(dev).replace(r"\*", r"\d+")), rid))
    for meth in m.get("method", []):
        rs.methods.setdefault(meth, []).append((rid, m.get("nargs")))
    if "call" in m:
        kinds = [k for k in CONDITIONS if k in m]
        if len(kinds) != 1:
            raise ValueError(f"rule {rid}: a call match needs exactly one of {CONDITIONS}")
        vals = m[kinds[0]]
        cond = CallCond(rid, m["arg"], m.get("position"), kinds[0],
                        tuple(vals) if isinstance(vals, list) else ())
        for q in m["call"]:
            rs.calls.setdefault(q, []).append(cond)
    for pat in m.get("name", []):
        (rs.prefixes.__setitem__(pat[:-2], rid) if pat.endswith(".*")
         else rs.names.__setitem__(pat, rid))


def select(rs: Ruleset, select: list[str], ignore: list[str]) -> set[str]:
    """The rule ids enabled by --select/--ignore (ids or their dotted prefixes: `xla`)."""
    def expand(items: list[str], flag: str) -> set[str]:
        out: set[str] = set()
        for it in items:
            hit = {r for r in rs.rules if r == it or r.startswith(it.rstrip(".") + ".")}
            if not hit:
                raise UsageError(f"{flag} {it}: no such rule in the {rs.release} rules",
                                 hint="neuron-env scan --list-rules shows them")
            out |= hit
        return out

    chosen = expand(select, "--select") if select else set(rs.rules)
    return chosen - expand(ignore, "--ignore")
