"""The HTML page of a fleet document (neuron-env.fleet/1, `fleet report|doctor --format
html`): the verdict counts, the failing nodes first (each failing check with its fix), a heat
map of every check's status across the nodes (an HTML table: searchable, readable at 300
nodes, drawn without the `html` extra), the checks that fail most (a plot), version drift."""

from __future__ import annotations

from collections import Counter
from typing import Any

from neuron_env.report import plots
from neuron_env.report.html_page import badge, esc, page, plot, table

VERDICT_ORDER = ("fail", "error", "timeout", "unreachable", "unreadable", "warn", "pass")
CHECK_STATUSES = ("pass", "warn", "fail", "error", "skip")
_RANK = {"error": 0, "fail": 1, "warn": 2, "skip": 3, "pass": 4}


def _instances(body: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [r for r in body.get("instances") or [] if isinstance(r, dict)]
    order = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return sorted(rows, key=lambda r: (order.get(str(r.get("verdict")), 0), str(r.get("id"))))


def _check_ids(nodes: list[dict[str, Any]]) -> list[str]:
    """Every check any node reported, the ones that fail most often first."""
    bad: Counter[str] = Counter()
    seen: dict[str, None] = {}
    for r in nodes:
        for cid, st in (r.get("checks") or {}).items():
            seen.setdefault(str(cid), None)
            if st in ("fail", "error", "warn"):
                bad[str(cid)] += 2 if st != "warn" else 1
    return sorted(seen, key=lambda c: (-bad[c], c))


def failing(nodes: list[dict[str, Any]]) -> str:
    bad = [r for r in nodes if r.get("verdict") not in ("pass", "warn")]
    out = [f"<h2>Nodes not passing ({len(bad)})</h2>"]
    if not bad:
        return "".join(out) + "<p>Every node passes.</p>"
    rows = []
    for r in bad:
        fixes = "".join(
            f"<li>{badge(p.get('status'))} <code>{esc(p.get('id'))}</code>: "
            f"{esc(p.get('summary'))}"
            + (f"<pre>{esc(p['fix'])}</pre>" if p.get("fix") else "") + "</li>"
            for p in r.get("failing") or [] if isinstance(p, dict))
        rows.append((f'<code class="node">{esc(r.get("id"))}</code>', badge(r.get("verdict")),
                     f"<ul>{fixes}</ul>" if fixes else esc(r.get("reason"))))
    return "".join(out) + table(("node", "verdict", "why, and each failing check's fix"), rows)


def _rows(nodes: list[dict[str, Any]], checks: list[str]) -> list[tuple[list[str], str, str]]:
    """(node ids, verdict, statuses) per heat-map row: a node that does not pass has its own
    row; passing nodes with the same statuses share one (300 nodes stay a short page)."""
    out: list[tuple[list[str], str, str]] = []
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in nodes:
        st = r.get("checks") or {}
        vec = tuple(str(st.get(c, "none")) for c in checks)
        if r.get("verdict") in ("pass", "warn"):
            groups.setdefault((str(r.get("verdict")), vec), []).append(str(r.get("id")))
        else:
            out.append(([str(r.get("id"))], str(r.get("verdict")), "\t".join(vec)))
    return out + [(ids, v, "\t".join(vec)) for (v, vec), ids in groups.items()]


def heat_map(nodes: list[dict[str, Any]], checks: list[str]) -> str:
    out = [f"<h2>Checks across nodes ({len(nodes)} nodes × {len(checks)} checks)</h2>"]
    if not checks:
        return "".join(out) + '<p class="muted">no node sent check results.</p>'
    head = "".join(f'<th class="v" title="{esc(c)}">{esc(c)}</th>' for c in checks)
    rows = []
    for ids, verdict, vec in _rows(nodes, checks):
        cells = "".join(
            f'<td class="c s-{s if s in CHECK_STATUSES else "none"}" '
            f'title="{esc(c)}: {esc(s if s != "none" else "not run")}"></td>'
            for c, s in zip(checks, vec.split("\t"), strict=True))
        name = (f'<code class="node">{esc(ids[0])}</code>' if len(ids) == 1 else
                f"<details><summary>{len(ids)} nodes</summary>"
                + " ".join(f'<code class="node">{esc(i)}</code>' for i in ids) + "</details>")
        rows.append(f'<tr><td class="id">{name}</td><td>{badge(verdict)}</td>{cells}</tr>')
    legend = " ".join(badge(s) for s in CHECK_STATUSES)
    return "".join(out) + (f"<p>{legend} <span class=\"badge s-none\">not run</span> "
                           "(hover a cell for its check; passing nodes with the same results "
                           "share a row)</p>"
                           f'<table class="heat"><thead><tr><th>node</th><th>verdict</th>'
                           f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def by_check(nodes: list[dict[str, Any]], checks: list[str]) -> str:
    """How many nodes pass, warn, fail each check that does not pass everywhere (a plot)."""
    counts = {c: Counter(str((r.get("checks") or {}).get(c)) for r in nodes) for c in checks}
    shown = [c for c in checks if any(counts[c][s] for s in ("warn", "fail", "error"))][:40]
    if not shown or not plots.available():
        return ""
    return plot(plots.stacked, shown, {s: [counts[c][s] for c in shown]
                                       for s in ("fail", "error", "warn", "pass")},
                title="nodes per status, for each check that does not pass everywhere",
                xlabel="nodes", salt="fleet")


def drift(body: dict[str, Any]) -> str:
    d = body.get("drift") or {}
    rows = [(esc(x.get("component")), esc(x.get("majority")), esc(x.get("off_majority")),
             ", ".join(f"<code>{esc(i)}</code>" for i in x.get("instances") or []))
            for x in d.get("drifting") or [] if isinstance(x, dict)]
    if not rows:
        return "<h2>Version drift</h2><p>Every node runs the same versions.</p>"
    return "<h2>Version drift</h2>" + table(
        ("component", "most nodes run", "nodes off it", "some of them"), rows, numeric=(2,))


def render(body: dict[str, Any]) -> str:
    s = body.get("summary") or {}
    nodes = _instances(body)
    checks = _check_ids(nodes)
    ok = body.get("exit_code") == 0
    counts = " ".join(f"{badge(v)} {esc(s.get(v, 0))}" for v in VERDICT_ORDER if s.get(v))
    head = (f'<h1>neuron-env fleet: {esc(s.get("instances", len(nodes)))} nodes '
            f'<span class="verdict s-{"pass" if ok else "fail"}">'
            f"{'PASS' if ok else 'FAIL'}</span></h1><p>{counts}</p>")
    trunc = body.get("truncated") or []
    note = (f"<p>{len(trunc)} report(s) truncated by SSM: rerun with --s3-bucket to read whole "
            "reports.</p>") if trunc else ""
    return page("neuron-env fleet", head + note + failing(nodes) + by_check(nodes, checks)
                + heat_map(nodes, checks) + drift(body))
