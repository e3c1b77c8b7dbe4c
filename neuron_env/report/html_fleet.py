"""The HTML page of a fleet document (neuron-env.fleet/1, `fleet report|doctor --format
html`): the verdict counts, the failing nodes first, grouped by what fails (each failure
signature with its fixes once, and the nodes that share it), a heat map of the checks'
statuses across the nodes (an HTML table: searchable, drawn without the `html` extra), the
checks that fail most (a plot), version drift.

The page stays linear in its input and readable at any fleet size (#45, #48, #49): nodes with
the same results share a row; the heat map shows the MAX_COLUMNS checks that fail most (the
others in one column, their worst status); at most MAX_ROWS rows and MAX_IDS node ids per row
(the JSON view has every node); a check id is cut to LABEL characters before it is drawn."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from neuron_env.report import plots
from neuron_env.report.html_page import badge, esc, page, plot, table

VERDICT_ORDER = ("fail", "error", "timeout", "unreachable", "unreadable", "warn", "pass")
CHECK_STATUSES = ("pass", "warn", "fail", "error", "skip")
_WORST = ("error", "fail", "warn", "skip", "pass", "none")  # worst first
MAX_COLUMNS = 40
MAX_ROWS = 200
MAX_IDS = 100
MAX_FAILS = 20  # failing checks listed per row
LABEL = 60     # a check id in a column head or a plot label
TEXT = 300     # a check id, summary or reason elsewhere on the page
FIX = 2000
# "not run" (the node reported no such check) is hatched white, "skip" a solid grey
STYLE = ("<style>.s-notrun{background:repeating-linear-gradient(45deg,#fff 0 3px,#cfcfcf 3px"
         " 5px);color:#1c1c1c;outline:1px solid #bdbdbd;outline-offset:-1px}"
         ".s-skip{background:#8d8d8d;color:#fff}</style>")


def cut(value: object, limit: int) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _nodes(body: dict[str, Any]) -> Iterable[dict[str, Any]]:
    return (r for r in body.get("instances") or [] if isinstance(r, dict))


def _rank(verdict: object) -> int:
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else 0


def _check_ids(counts: dict[str, Counter[str]]) -> list[str]:
    """Every check any node reported, the ones that fail most often first."""
    def bad(c: str) -> int:
        n = counts[c]
        return 2 * (n["fail"] + n["error"]) + n["warn"]
    return sorted(counts, key=lambda c: (-bad(c), c))


def _ids(ids: list[str], total: int) -> str:
    more = f" … {total - len(ids)} more (see --format json)" if total > len(ids) else ""
    return " ".join(f'<code class="node">{esc(cut(i, TEXT))}</code>' for i in ids) + more


def _group_name(ids: list[str], total: int) -> str:
    if total == 1:
        return f'<code class="node">{esc(cut(ids[0], TEXT))}</code>'
    return f"<details><summary>{total} nodes</summary>{_ids(ids, total)}</details>"


def failing(nodes: Iterable[dict[str, Any]]) -> str:
    """The nodes that do not pass, one row per failure signature (verdict + failing checks, or
    the reason where none): its fixes once, then the nodes that share it."""
    groups: dict[Any, list[Any]] = {}  # signature -> [count, ids, the row's "why" HTML]
    for r in nodes:
        if r.get("verdict") in ("pass", "warn"):
            continue
        fails = tuple((p.get("id"), p.get("status"), p.get("summary"), p.get("fix"))
                      for p in r.get("failing") or [] if isinstance(p, dict))
        sig = (str(r.get("verdict")), fails or cut(r.get("reason"), TEXT))
        g = groups.get(sig)
        if g is None:
            g = groups[sig] = [0, [], fails]
        g[0] += 1
        if len(g[1]) < MAX_IDS:
            g[1].append(str(r.get("id")))
    total = sum(g[0] for g in groups.values())
    out = [f"<h2>Nodes not passing ({total})</h2>"]
    if not groups:
        return "".join(out) + "<p>Every node passes.</p>"
    order = sorted(groups.items(), key=lambda kv: (_rank(kv[0][0]), -kv[1][0]))
    rows = [(_group_name(ids, n), badge(sig[0]), _why(fails) or esc(sig[1]))
            for sig, (n, ids, fails) in order[:MAX_ROWS]]
    more = (f'<p class="muted">… {len(order) - MAX_ROWS} more kinds of failure (see --format '
            "json)</p>") if len(order) > MAX_ROWS else ""
    return "".join(out) + (f"<p>{len(groups)} kind(s) of failure; nodes that fail the same "
                           "way share a row.</p>") + table(
        ("nodes", "verdict", "why, and each failing check's fix"), rows) + more


def _why(fails: tuple[Any, ...]) -> str:
    items = "".join(
        f"<li>{badge(st)} <code>{esc(cut(cid, TEXT))}</code>: {esc(cut(summ, TEXT))}"
        + (f"<pre>{esc(cut(fix, FIX))}</pre>" if fix else "") + "</li>"
        for cid, st, summ, fix in fails[:MAX_FAILS])
    if len(fails) > MAX_FAILS:
        items += f"<li>… {len(fails) - MAX_FAILS} more failing checks (see --format json)</li>"
    return f"<ul>{items}</ul>" if items else ""


def _worst(statuses: Iterable[str]) -> str:
    return min(statuses, key=_WORST.index, default="none")


def _rows(nodes: Iterable[dict[str, Any]], columns: list[str], rest: set[str]) -> list[Any]:
    """(verdict, statuses, count, ids) per heat-map row: nodes with the same verdict and
    statuses share one; worst rows first."""
    groups: dict[tuple[str, tuple[str, ...]], list[Any]] = {}
    for r in nodes:
        st = r.get("checks") or {}
        vec = tuple(str(st.get(c, "none")) for c in columns)
        if rest:
            vec += (_worst(str(s) for c, s in st.items() if c in rest),)
        g = groups.setdefault((str(r.get("verdict")), vec), [0, []])
        g[0] += 1
        if len(g[1]) < MAX_IDS:
            g[1].append(str(r.get("id")))
    return sorted(((v, vec, n, ids) for (v, vec), (n, ids) in groups.items()),
                  key=lambda x: (_rank(x[0]), -x[2]))


def _cell(check: str, s: str) -> str:
    cls = s if s in CHECK_STATUSES else "notrun"
    return (f'<td class="c s-{cls}" title="{esc(cut(check, TEXT))}: '
            f'{"not run" if cls == "notrun" else cls}"></td>')


def heat_map(nodes: Iterable[dict[str, Any]], checks: list[str], total: int) -> str:
    columns, rest = checks[:MAX_COLUMNS], set(checks[MAX_COLUMNS:])
    out = [f"<h2>Checks across nodes ({total} nodes × {len(checks)} checks)</h2>"]
    if not checks:
        return "".join(out) + '<p class="muted">no node sent check results.</p>'
    heads = columns + ([f"{len(rest)} other checks (worst status)"] if rest else [])
    head = "".join(f'<th class="v" title="{esc(cut(c, TEXT))}">{esc(cut(c, LABEL))}</th>'
                   for c in heads)
    rows = _rows(nodes, columns, rest)
    html_rows = [f'<tr><td class="id">{_group_name(ids, n)}</td><td>{badge(v)}</td>'
                 + "".join(_cell(c, s) for c, s in zip(heads, vec, strict=True)) + "</tr>"
                 for v, vec, n, ids in rows[:MAX_ROWS]]
    more = (f'<p class="muted">… {len(rows) - MAX_ROWS} more rows, '
            f"{sum(r[2] for r in rows[MAX_ROWS:])} nodes (see --format json)</p>"
            if len(rows) > MAX_ROWS else "")
    cap = (f"; the {MAX_COLUMNS} checks that fail most, the other {len(rest)} in the last "
           "column" if rest else "")
    legend = " ".join(badge(s) for s in CHECK_STATUSES)
    return "".join(out) + (f"<p>{legend} <span class=\"badge s-notrun\">not run</span> "
                           "(hover a cell for its check; nodes with the same verdict and results "
                           f"share a row{cap})</p>"
                           f'<table class="heat"><thead><tr><th>nodes</th><th>verdict</th>'
                           f"{head}</tr></thead><tbody>{''.join(html_rows)}</tbody></table>"
                           + more)


def by_check(counts: dict[str, Counter[str]], checks: list[str]) -> str:
    """How many nodes pass, warn, fail each check that does not pass everywhere (a plot)."""
    shown = [c for c in checks if any(counts[c][s] for s in ("warn", "fail", "error"))][:40]
    if not shown or not plots.available():
        return ""
    labels = [cut(c, LABEL) for c in shown]  # cut BEFORE matplotlib lays a 1 MB label out
    return plot(plots.stacked, labels, {s: [counts[c][s] for c in shown]
                                        for s in ("fail", "error", "warn", "pass")},
                title="nodes per status, for each check that does not pass everywhere",
                xlabel="nodes", salt="fleet")


def drift(body: dict[str, Any]) -> str:
    d = body.get("drift") or {}
    rows = [(esc(cut(x.get("component"), TEXT)), esc(cut(x.get("majority"), TEXT)),
             esc(x.get("off_majority")),
             ", ".join(f"<code>{esc(cut(i, TEXT))}</code>" for i in x.get("instances") or []))
            for x in d.get("drifting") or [] if isinstance(x, dict)]
    if not rows:
        return "<h2>Version drift</h2><p>Every node runs the same versions.</p>"
    return "<h2>Version drift</h2>" + table(
        ("component", "most nodes run", "nodes off it", "some of them"), rows, numeric=(2,))


def _counts(body: dict[str, Any]) -> tuple[dict[str, Counter[str]], int]:
    """Per check id, how many nodes reported each status; and the number of nodes."""
    counts: dict[str, Counter[str]] = {}
    n = 0
    for r in _nodes(body):
        n += 1
        for cid, st in (r.get("checks") or {}).items():
            counts.setdefault(str(cid), Counter())[str(st)] += 1
    return counts, n


def render(body: dict[str, Any]) -> str:
    s = body.get("summary") or {}
    counts, n = _counts(body)
    checks = _check_ids(counts)
    ok = body.get("exit_code") == 0
    verdicts = " ".join(f"{badge(v)} {esc(s.get(v, 0))}" for v in VERDICT_ORDER if s.get(v))
    head = (f'<h1>neuron-env fleet: {esc(s.get("instances", n))} nodes '
            f'<span class="verdict s-{"pass" if ok else "fail"}">'
            f"{'PASS' if ok else 'FAIL'}</span></h1><p>{verdicts}</p>")
    trunc = body.get("truncated") or []
    note = (f"<p>{len(trunc)} report(s) truncated by SSM: rerun with --s3-bucket to read whole "
            "reports.</p>") if trunc else ""
    return page("neuron-env fleet", STYLE + head + note + failing(_nodes(body))
                + by_check(counts, checks) + heat_map(_nodes(body), checks, n) + drift(body))
