"""Pure: many doctor reports (however they were gathered) -> one neuron-env.fleet/1 body:
per-instance verdicts, the failing checks, unreachable instances, version drift, exit code."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from neuron_env.report import verdict as V
from neuron_env.report.envelope import envelope

SCHEMA = "neuron-env.fleet/1"
OK = ("pass", "warn")
VERDICTS = ("pass", "warn", "fail", "error", "timeout", "unreachable", "unreadable")
EXAMPLES = 10  # instance ids listed per failing check / minority version


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


def instance(e: Entry) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": e.id, "source": e.source, "truncated": e.truncated,
                           "failing": [], "checks": None, "versions": None,
                           "instance_type": None, "unreachable": None}
    if e.unreachable:
        rec.update(verdict="unreachable", exit_code=None, reason=V.one_line(
            f"{e.unreachable}: {e.detail or ''}".rstrip(": "), 200),
            unreachable={"reason": e.unreachable, "detail": e.detail})
    elif e.doc is None:
        v = (V.VERDICT_OF_EXIT.get(e.exit_code, "unreadable")
             if e.truncated and e.exit_code is not None else "unreadable")
        rec.update(verdict=v, exit_code=e.exit_code,
                   reason=V.one_line(e.unreadable or "no report", 200))
    else:
        try:
            itype = ((e.doc.get("target") or {}).get("instance") or {}).get("type")
            rec.update(verdict=V.verdict(e.doc), exit_code=e.doc.get("exit_code"),
                       reason=V.reason(e.doc), failing=V.problems(e.doc),
                       checks=V.statuses(e.doc), versions=V.versions(e.doc),
                       instance_type=None if itype is None else str(itype))
        except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as err:
            # one report the shape check let through and still cannot be read: that
            # instance is unreadable, the rest of the fleet is still aggregated
            rec.update(verdict="unreadable", exit_code=None, failing=[], checks=None,
                       versions=None,
                       instance_type=None, reason=V.one_line(
                           f"not a doctor report: {type(err).__name__}: {err}", 200))
    return rec


def drift(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per component: how many instances run each version; `drifting`: components with more
    than one version, with the instances off the most common one."""
    versions: dict[str, Counter] = {c: Counter() for c in V.COMPONENTS}
    for r in records:
        for c, v in (r["versions"] or {}).items():
            versions[c][v or "missing"] += 1
    drifting = []
    for c, counter in versions.items():
        if len(counter) > 1:
            majority = counter.most_common(1)[0][0]
            off = [r["id"] for r in records if r["versions"]
                   and (r["versions"][c] or "missing") != majority]
            drifting.append({"component": c, "majority": majority, "off_majority": len(off),
                             "instances": off[:EXAMPLES]})
    return {"versions": {c: dict(n.most_common()) for c, n in versions.items()},
            "drifting": drifting}


def failing_checks(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for r in records:
        for p in r["failing"]:
            f = seen.setdefault(p["id"], {"id": p["id"], "status": p["status"], "count": 0,
                                          "summary": p["summary"], "instances": []})
            f["count"] += 1
            if len(f["instances"]) < EXAMPLES:
                f["instances"].append(r["id"])
    return sorted(seen.values(), key=lambda f: (-f["count"], f["id"]))


def aggregate(entries: list[Entry], source: dict[str, Any]) -> dict[str, Any]:
    records = [instance(e) for e in entries]
    summary = dict.fromkeys(VERDICTS, 0)
    for r in records:
        summary[r["verdict"]] += 1
    summary["instances"] = len(records)
    bad = len(records) - summary["pass"] - summary["warn"]
    return envelope(SCHEMA, 1 if bad else 0, source=source, summary=summary,
                    failing_checks=failing_checks(records),
                    unreachable=[{"id": r["id"], **r["unreachable"]} for r in records
                                 if r["unreachable"]],
                    truncated=[r["id"] for r in records if r["truncated"]],
                    drift=drift(records), instances=records)
