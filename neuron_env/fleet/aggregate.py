"""Pure: many doctor reports (however they were gathered) -> one neuron-env.fleet/1 body:
per-instance verdicts, the failing checks, unreachable instances, version drift, exit code.

Streamed (#49): `Fleet.add` reads one Entry into a per-node summary (a small tuple; equal
values are stored once, so 10,000 nodes with the same checks share one check vector) and
drops the document, so memory grows with the nodes' summaries, never with their reports."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from neuron_env.report import verdict as V
from neuron_env.report.envelope import envelope

SCHEMA = "neuron-env.fleet/1"
OK = ("pass", "warn")
VERDICTS = ("pass", "warn", "fail", "error", "timeout", "unreachable", "unreadable")
EXAMPLES = 10  # instance ids listed per failing check / minority version
# a check's status, as a node reported it, is one of these (doctor's closed set); anything
# else a report holds (a typo, a TAB, 1 MB of text) is read as "error": never passed on
STATUSES = ("pass", "warn", "fail", "skip", "error")
_STATUS = {s: s for s in STATUSES}


def status(value: object) -> str:
    """A reported status mapped onto the closed set (unknown -> "error")."""
    return _STATUS.get(value, "error") if isinstance(value, str) else "error"


@dataclass(frozen=True)
class Entry:
    """One instance as an engine returned it: a parsed doctor report, or why there is none."""

    id: str
    source: str
    doc: dict[str, Any] | None = None
    unreachable: str | None = None  # not-managed, offline, timed-out, access-denied, ...
    unreadable: str | None = None   # output there but not a doctor report (why)
    detail: str | None = None
    exit_code: int | None = None    # the remote exit status where the report is missing
    truncated: bool = False


class Node(NamedTuple):
    """What the fleet keeps of one instance (its report is not kept)."""

    id: str
    source: str
    verdict: str
    exit_code: int | None
    reason: str
    failing: tuple[tuple[str, str, str, str | None], ...]
    checks: bytes | None  # array("I") bytes: check index << 3 | status index
    versions: tuple[str | None, ...] | None
    instance_type: str | None
    unreachable: tuple[str, str | None] | None
    truncated: bool


class Fleet:
    """The streaming aggregator: add() every Entry, then body(source)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.check_ids: dict[str, int] = {}
        self._shared: dict[Any, Any] = {}
        self._codes: dict[tuple[Any, Any], int] = {}  # (id, status) as reported -> its code
        self._lines: dict[str, str] = {}  # a reason's text -> its one line
        self.summary = dict.fromkeys(VERDICTS, 0)
        self.failing: dict[str, list[Any]] = {}  # id -> [status, summary, count, node indexes]
        self.versions: dict[str, Counter[str]] = {c: Counter() for c in V.COMPONENTS}

    def _share(self, value: Any) -> Any:
        return self._shared.setdefault(value, value)

    def add(self, e: Entry) -> None:
        node = self._node(e)
        self.summary[node.verdict] += 1
        for p in node.failing:
            f = self.failing.setdefault(p[0], [p[1], p[2], 0, []])
            f[2] += 1
            if len(f[3]) < EXAMPLES:
                f[3].append(len(self.nodes))
        for c, v in zip(V.COMPONENTS, node.versions or (), strict=False):
            self.versions[c][v or "missing"] += 1
        self.nodes.append(node)

    def _node(self, e: Entry) -> Node:
        s = self._share
        if e.unreachable:
            return Node(e.id, e.source, "unreachable", None, s(V.one_line(
                f"{e.unreachable}: {e.detail or ''}".rstrip(": "), 200)), (), None, None, None,
                (s(e.unreachable), e.detail), e.truncated)
        if e.doc is None:
            v = (V.VERDICT_OF_EXIT.get(e.exit_code, "unreadable")
                 if e.truncated and e.exit_code is not None else "unreadable")
            return Node(e.id, e.source, v, e.exit_code, s(V.one_line(
                e.unreadable or "no report", 200)), (), None, None, None, None, e.truncated)
        try:
            return self._read(e)
        except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as err:
            # one report the shape check let through and still cannot be read: that
            # instance is unreadable, the rest of the fleet is still aggregated
            return Node(e.id, e.source, "unreadable", None, V.one_line(
                f"not a doctor report: {type(err).__name__}: {err}", 200), (), None, None,
                None, None, e.truncated)

    def _read(self, e: Entry) -> Node:
        """One pass over the results: each (id, status) pair is coded once per fleet, the
        failing ones kept (as verdict.problems), the reason made one line once per text."""
        doc, s, memo = e.doc or {}, self._share, self._codes
        bad = (*V.BAD, "warn") if doc.get("strict", False) else V.BAD
        codes, failing = array("I"), []
        for r in doc.get("results") or []:
            key = (r.get("id"), r.get("status"))
            try:
                code = memo[key]
            except (KeyError, TypeError):  # new, or an id/status that is not hashable
                code = self._code(key)
            codes.append(code)
            if key[1] in bad:
                failing.append(s((str(key[0]), key[1], str(r.get("summary", "")),
                                  V._fix(r))))
        text = V.reason_text(doc, [{"id": f[0], "summary": f[2]} for f in failing])
        line = self._lines.get(text)
        if line is None:
            line = self._lines[text] = V.one_line(text, V.REASON_MAX)
        itype = ((doc.get("target") or {}).get("instance") or {}).get("type")
        exit_code = doc.get("exit_code")
        return Node(e.id, e.source, V.verdict(doc),
                    exit_code if isinstance(exit_code, int) else None,
                    line, s(tuple(failing)), s(codes.tobytes()),
                    s(tuple(V.versions(doc).values())),
                    None if itype is None else s(str(itype)), None, e.truncated)

    def _code(self, key: tuple[Any, Any]) -> int:
        cid = str(key[0])
        i = self.check_ids.setdefault(cid, len(self.check_ids))
        code = i << 3 | STATUSES.index(status(key[1]))
        if type(key[0]) is str and (key[1] is None or type(key[1]) is str):
            self._codes[key] = code  # (1, ..) and (True, ..) are one key: strings only
        return code

    def ids(self) -> list[str]:
        """Each node's id in the document: its own where it is unique; an id that several
        reports share (a rerun, a cloned AMI, copied files) is followed by the report's file
        name, so each row says which file it came from."""
        count = Counter(n.id for n in self.nodes)
        names = [n.id if count[n.id] == 1 else f"{n.id} ({_file_name(n.source)})"
                 for n in self.nodes]
        if len(set(names)) == len(names):
            return names
        seen: Counter[str] = Counter()
        out = []
        for x in names:  # the same file name in two folders: numbered as well
            seen[x] += 1
            out.append(x if seen[x] == 1 else f"{x}#{seen[x]}")
        return out

    def body(self, source: dict[str, Any]) -> dict[str, Any]:
        ids = self.ids()
        summary = {**self.summary, "instances": len(self.nodes)}
        bad = len(self.nodes) - summary["pass"] - summary["warn"]
        return envelope(SCHEMA, 1 if bad else 0, source=source, summary=summary,
                        failing_checks=self._failing_checks(ids),
                        unreachable=[{"id": ids[i], "reason": n.unreachable[0],
                                      "detail": n.unreachable[1]}
                                     for i, n in enumerate(self.nodes) if n.unreachable],
                        truncated=[ids[i] for i, n in enumerate(self.nodes) if n.truncated],
                        drift=self._drift(ids), instances=Instances(self, ids))

    def _failing_checks(self, ids: list[str]) -> list[dict[str, Any]]:
        out = [{"id": cid, "status": st, "count": n, "summary": summ,
                "instances": [ids[i] for i in idx]}
               for cid, (st, summ, n, idx) in self.failing.items()]
        return sorted(out, key=lambda f: (-f["count"], f["id"]))

    def _drift(self, ids: list[str]) -> dict[str, Any]:
        """Per component: how many instances run each version; `drifting`: components with
        more than one version, with the instances off the most common one."""
        drifting = []
        for k, (c, counter) in enumerate(self.versions.items()):
            if len(counter) > 1:
                majority = counter.most_common(1)[0][0]
                off = [i for i, n in enumerate(self.nodes)
                       if n.versions and (n.versions[k] or "missing") != majority]
                drifting.append({"component": c, "majority": majority,
                                 "off_majority": len(off),
                                 "instances": [ids[i] for i in off[:EXAMPLES]]})
        return {"versions": {c: dict(n.most_common()) for c, n in self.versions.items()},
                "drifting": drifting}


def _file_name(source: str) -> str:
    return source.rstrip("/").rsplit("/", 1)[-1] or source


class Instances(Sequence[dict[str, Any]]):
    """The body's `instances`, one dict per node made when it is read (a 100,000-node fleet
    is never held as 100,000 dicts); `list(...)` of it is the plain JSON list."""

    def __init__(self, fleet: Fleet, ids: list[str]) -> None:
        self._fleet, self._ids = fleet, ids
        self._names = {i: c for c, i in fleet.check_ids.items()}

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._record(self._fleet.nodes[i], self._ids[i])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for n, i in zip(self._fleet.nodes, self._ids, strict=True):
            yield self._record(n, i)

    def _record(self, n: Node, iid: str) -> dict[str, Any]:
        checks = None
        if n.checks is not None:
            codes = array("I")
            codes.frombytes(n.checks)
            checks = {self._names[c >> 3]: STATUSES[c & 7] for c in codes}
        return {"id": iid, "source": n.source, "truncated": n.truncated,
                "failing": [{"id": a, "status": b, "summary": c, "fix": d}
                            for a, b, c, d in n.failing],
                "checks": checks,
                "versions": None if n.versions is None else dict(zip(V.COMPONENTS, n.versions,
                                                                     strict=True)),
                "instance_type": n.instance_type,
                "unreachable": None if n.unreachable is None else {
                    "reason": n.unreachable[0], "detail": n.unreachable[1]},
                "verdict": n.verdict, "exit_code": n.exit_code, "reason": n.reason}


def stream(entries: Iterable[Entry], source: dict[str, Any]) -> dict[str, Any]:
    """The fleet body, its `instances` made on demand (see Instances)."""
    fleet = Fleet()
    for e in entries:
        fleet.add(e)
    return fleet.body(source)


def aggregate(entries: Iterable[Entry], source: dict[str, Any]) -> dict[str, Any]:
    """The fleet body as plain JSON values (instances a list)."""
    body = stream(entries, source)
    return {**body, "instances": list(body["instances"])}
