"""The parts every HTML page is made of (report/html.py, html_trial.py, html_fleet.py): the
style, the Content-Security-Policy that lets the browser load nothing, `esc` (html.escape,
quotes too) for every value taken from a report, tables, badges, figures and the page itself."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;
max-width:1150px;padding:0 1em;color:#1c1c1c;background:#fff}
h1{font-size:1.45em;margin:.2em 0}h2{font-size:1.15em;margin:1.6em 0 .5em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.4em 0}th,td{padding:.25em .6em;text-align:left;
vertical-align:top;border-bottom:1px solid #eee}th{background:#f5f5f5}
td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em}
pre{background:#f6f8fa;padding:.5em .7em;overflow-x:auto;white-space:pre-wrap;margin:.3em 0}
.verdict{display:inline-block;padding:.15em .6em;border-radius:4px;color:#fff;font-weight:600}
.s-pass{background:#2e7d32}.s-warn{background:#f9a825;color:#1c1c1c}.s-fail{background:#c62828}
.s-error,.s-timeout{background:#6a1b9a}.s-skip,.s-none{background:#bdbdbd;color:#1c1c1c}
.s-unreachable,.s-unreadable{background:#455a64}
.badge{display:inline-block;min-width:3.2em;text-align:center;padding:0 .3em;
border-radius:3px;color:#fff;font-size:.85em}
code.node{white-space:nowrap}ul{margin:.2em 0;padding-left:1.2em}
.note{color:#555}.muted{color:#777}
.heat{font-size:12px}.heat td,.heat th{padding:0;border:1px solid #fff}
.heat td.c{width:14px;height:14px;min-width:14px}
.heat th.v{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:400;
padding:.3em 0;white-space:nowrap}
.heat td.id{padding:0 .5em;max-width:40em}
.strip{display:flex;gap:2px;margin:.4em 0}.strip span{flex:1;height:18px;border-radius:2px}
figure{margin:.6em 0}svg{max-width:100%;height:auto}
"""


def esc(value: object) -> str:
    """Any value from a report, as HTML text (also safe inside a quoted attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def badge(status: object) -> str:
    s = esc(status)
    return f'<span class="badge s-{s}">{s}</span>'


def table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """A table whose cells are already HTML (escape values with `esc` first)."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def num(value: object, fmt: str = ".4g") -> str:
    return esc(format(value, fmt)) if isinstance(value, int | float) else "–"


def plot(draw: Any, *args: Any, **kw: Any) -> str:
    """A figure drawn by report/plots.py, or '' when the `html` extra is not installed (the
    page says once how to get plots)."""
    from neuron_env.report import plots

    return f"<figure>{draw(*args, **kw)}</figure>" if plots.available() else ""


def plots_note() -> str:
    from neuron_env.report import plots

    return "" if plots.available() else (
        f'<p class="note">Plots are not drawn: matplotlib is not installed. To get them: '
        f"<code>{esc(plots.EXTRA_HINT)}</code></p>")


def page(title: str, body: str) -> str:
    from neuron_env import __version__

    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
            f'{plots_note()}<p class="muted">neuron-env {esc(__version__)}</p>'
            "</body></html>\n")


def checks_table(results: Iterable[Any]) -> str:
    rows = [(badge(r.status), f"<code>{esc(r.id)}</code>", esc(r.summary),
             f"<pre>{esc(r.fix_command or r.fix)}</pre>" if (r.fix_command or r.fix) else "")
            for r in results]
    return table(("status", "check", "summary", "fix"), rows)
