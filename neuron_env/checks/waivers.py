"""Waivers: a known problem accepted for a reason, until a date, recorded in every report, and
loud once it expires (instead of a silent --skip). Parsing raises UsageError (exit 2);
applying is pure."""

from __future__ import annotations

import datetime as dt
from typing import Any

from neuron_env.errors import UsageError
from neuron_env.report.model import Result
from neuron_env.util.record import record, replace

PROBLEMS = ("fail", "warn", "error")


@record
class Waiver:
    id: str  # a check id or a category
    reason: str
    until: dt.date | None = None
    source: str = "--waive"

    def matches(self, id_: str) -> bool:
        return id_ == self.id or id_.startswith(self.id + ".")

    def expired(self, today: dt.date) -> bool:
        return self.until is not None and today > self.until

    def serialize(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason,
                "until": self.until.isoformat() if self.until else None, "source": self.source}


def _date(text: str | None, where: str) -> dt.date | None:
    if text in (None, ""):
        return None
    try:
        return dt.date.fromisoformat(str(text))
    except ValueError:
        raise UsageError(f"{where}: {text!r} is not a date",
                         hint="use YYYY-MM-DD, e.g. --until 2026-12-31") from None


def from_flags(ids: list[str], reasons: list[str], untils: list[str]) -> list[Waiver]:
    """`--waive A --reason R [--until D]` (repeat the trio; one --reason/--until may serve all)."""
    if not ids:
        if reasons or untils:
            raise UsageError("--reason/--until need --waive ID", hint="--waive driver.packages "
                             "--reason 'pinned by the AMI team' --until 2026-12-31")
        return []

    def pick(values: list[str], i: int) -> str | None:
        return values[i] if len(values) == len(ids) else values[0] if len(values) == 1 else None

    if not reasons or len(reasons) not in (1, len(ids)):
        raise UsageError("every --waive needs a --reason TEXT (one for all, or one each)",
                         hint="--waive driver.packages --reason 'pinned by the AMI team'")
    if untils and len(untils) not in (1, len(ids)):
        raise UsageError("--until: give one date for all waivers, or one per --waive")
    out = []
    for i, id_ in enumerate(ids):
        reason = (pick(reasons, i) or "").strip()
        if not reason:
            raise UsageError(f"--waive {id_}: the reason is empty", hint="say why it is waived")
        out.append(Waiver(id_, reason, _date(pick(untils, i), f"--waive {id_} --until")))
    return out


MAX_FILE = 1024 * 1024  # a waivers file is a few lines of TOML


def _line_of(text: str, key: str) -> str:
    """ " (line N)" of the first `key =` in a TOML text, for a located message."""
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(key) and line.strip()[len(key):].lstrip().startswith("="):
            return f" (line {n})"
    return ""


def from_file(path: str) -> list[Waiver]:
    """A TOML file: `[[waiver]]` tables with id, reason and optional until. Read as untrusted
    input: a regular file of at most 1 MiB (a FIFO or /dev/zero is refused, never read), any
    shape error is a UsageError (exit 2) that says where."""
    from neuron_env.guards.files import FileProblem, read_bounded
    from neuron_env.matrix.loader import toml  # the project's one TOML reader

    try:
        text = read_bounded(path, MAX_FILE).decode("utf-8")
    except FileProblem as e:
        raise UsageError(f"--waivers {path}: {e.why}",
                         hint="give a TOML file of [[waiver]] tables") from None
    except OSError as e:
        raise UsageError(f"--waivers {path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"--waivers {path}: not UTF-8 text (byte {e.start})") from None
    try:
        data = toml().loads(text)
    except RecursionError:
        raise UsageError(f"--waivers {path}: not valid TOML: nested too deeply") from None
    except ValueError as e:
        raise UsageError(f"--waivers {path}: not valid TOML: {e}") from None
    hint = '[[waiver]]\nid = "driver.packages"\nreason = "why"\nuntil = 2026-12-31'
    tables = data.get("waiver")
    if tables is None:
        tables = []
    if not isinstance(tables, list):
        raise UsageError(f"--waivers {path}{_line_of(text, 'waiver')}: `waiver` is a "
                         f"{type(tables).__name__}, not an array of [[waiver]] tables",
                         hint=hint)
    out = []
    for n, w in enumerate(tables, 1):
        where = f"--waivers {path}: waiver #{n}"
        if not isinstance(w, dict) or not isinstance(w.get("id"), str) or not w["id"].strip() \
                or not isinstance(w.get("reason"), str) or not w["reason"].strip():
            raise UsageError(f"{where}: needs id and reason (strings)", hint=hint)
        until = w.get("until")
        if until is not None and not isinstance(until, dt.date | str):
            raise UsageError(f"{where}: until is a {type(until).__name__}, not a date",
                             hint="until = 2026-12-31")
        if isinstance(until, dt.datetime):
            until = until.date()
        out.append(Waiver(w["id"].strip(), w["reason"].strip(),
                          until if isinstance(until, dt.date) else _date(until, where),
                          source=str(path)))
    return out


def apply(results: list[Result], waivers: list[Waiver],
          today: dt.date | None = None) -> tuple[list[Result], list[dict[str, Any]]]:
    """(results with waivers applied, the waiver records for the report)."""
    today = today or dt.date.today()
    out: list[Result] = []
    used: dict[Waiver, list[str]] = {w: [] for w in waivers}
    for r in results:
        w = next((w for w in waivers if w.matches(r.id)), None)
        if w is None or r.status not in PROBLEMS:
            out.append(r)
            continue
        used[w].append(r.id)
        rec = {"reason": w.reason, "until": w.until.isoformat() if w.until else None,
               "status": r.status, "expired": w.expired(today), "source": w.source}
        if rec["expired"]:
            out.append(replace(r, waiver=rec, summary=f"{r.summary} (WAIVER EXPIRED on "
                                                      f"{rec['until']}: {w.reason})"))
        else:
            until = f" until {rec['until']}" if w.until else ""
            out.append(replace(r, status="skip", waiver=rec,
                               summary=f"WAIVED{until} ({w.reason}): {r.summary}"))
    records = [dict(w.serialize(), expired=w.expired(today), applied_to=ids)
               for w, ids in used.items()]
    return out, records
