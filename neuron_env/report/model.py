"""The one result model every command renders: Result, Report and the exit-code reduce."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from neuron_env.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_TIMEOUT
from neuron_env.util.record import factory, record

STATUSES = ("pass", "warn", "fail", "skip", "error")
RANK = {"skip": 0, "pass": 1, "warn": 2, "fail": 3, "error": 4}  # the one severity order
CATEGORIES = {
    "instance": "Instance",
    "os": "Operating system",
    "python": "Python environment",
    "install": "Install",
    "backend": "PyTorch backend",
    "driver": "Neuron driver and devices",
    "tools": "Neuron tools",
    "container": "Container",
    "cache": "Compile cache",
    "net": "Network (EFA)",
    "aws": "AWS",
    "smoke": "Device smoke test",
    "trial": "Model trial",
    "collectives": "Collectives",
    "fleet": "Fleet",
}
# the emulated rehearsal on a host with no device: doctor's fix lines (checks/fixes.py) and the
# text report's lead (report/text.py) say the same command, declared once, here below both
REHEARSAL_VENV = "~/neuron-rehearsal"
REHEARSE = f"neuron-env install --backend emulated --venv {REHEARSAL_VENV}"


@record
class Result:
    id: str
    category: str
    status: str
    summary: str
    observed: Any = None
    expected: Any = None
    fix: str | None = None
    docs: str | None = None
    details: dict[str, Any] | None = None
    timed_out: bool = False
    fix_command: str | None = None  # the runnable shell line of `fix` (pastes into bash as is)
    fix_safe: bool = False  # `doctor --fix` may run it: no sudo, touches the target env only
    duration_s: float | None = None  # how long the check took (set by the check runner)
    waiver: dict[str, Any] | None = None  # {reason, until, status, expired}: see checks/waivers

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"bad status {self.status!r}")

    def serialize(self) -> dict[str, Any]:
        d = {"id": self.id, "category": self.category, "status": self.status,
             "summary": self.summary, "observed": self.observed, "expected": self.expected,
             "fix": self.fix, "docs": self.docs}
        if self.details:
            d["details"] = self.details
        if self.timed_out:
            d["timed_out"] = True
        if self.fix_command:
            d["fix_command"] = self.fix_command
            d["fix_safe"] = self.fix_safe
        if self.duration_s is not None:
            d["duration_s"] = self.duration_s
        if self.waiver:
            d["waiver"] = self.waiver
        return d


def counts(results: tuple[Result, ...] | list[Result]) -> dict[str, int]:
    c = dict.fromkeys(STATUSES, 0)
    for r in results:
        c[r.status] += 1
    return c


def exit_code(results: tuple[Result, ...] | list[Result], strict: bool = False) -> int:
    """error -> 3, a timed-out result -> 4, fail (or warn under --strict) -> 1, else 0."""
    st = {r.status for r in results}
    if "error" in st:
        return EXIT_INTERNAL
    if any(r.timed_out for r in results):
        return EXIT_TIMEOUT
    if "fail" in st or (strict and "warn" in st):
        return EXIT_FAILED
    return EXIT_OK


@record
class Report:
    schema: str
    tool: dict[str, str]
    matrix: dict[str, Any] | None
    target: dict[str, Any]
    results: tuple[Result, ...]
    exit_code: int
    extra: dict[str, Any] = factory(dict)
    # the text view (report -> str); None: the grouped checks (report/text.py)
    view: Callable[..., str] | None = None
    # the command's own markdown view, where it has one; None: report/markdown.py
    markdown: Callable[..., str] | None = None

    @property
    def summary(self) -> dict[str, int]:
        return counts(self.results)

    def serialize(self) -> dict[str, Any]:
        from neuron_env.report.envelope import envelope

        return envelope(self.schema, self.exit_code, matrix=self.matrix, target=self.target,
                        results=[r.serialize() for r in self.results], summary=self.summary,
                        **self.extra)


@record
class Document:
    """A command's output that is a document, not check results (matrix, instance): the whole
    JSON body (an envelope) and the text view that renders it for people."""

    body: dict[str, Any]
    view: Callable[[dict[str, Any]], str]
    junit: Callable[[dict[str, Any]], str | Iterable[str]] | None = None  # a JUnit view (pieces)
    html: Callable[[dict[str, Any]], str] | None = None  # an HTML page, where one exists
    sarif: Callable[[dict[str, Any]], str] | None = None  # scan's SARIF 2.1.0 log
    # its own JSON text, where the body is too large for the indenting encoder (a fleet): a
    # str, or pieces each ending at a line end, written one at a time (report/render.pieces)
    json: Callable[[dict[str, Any]], str | Iterable[str]] | None = None
    # control characters the text view may print raw (guards.text.clean escapes every other):
    # a diff for `patch` keeps a CRLF file's CR and a form feed
    raw_ok: str = ""

    @property
    def exit_code(self) -> int:
        return int(self.body.get("exit_code", 0))

    def serialize(self) -> dict[str, Any]:
        if self.json is not None:  # a body with a lazy part (fleet instances): made a list
            return {k: v if isinstance(v, dict | list | str | int | float | None) else list(v)
                    for k, v in self.body.items()}
        return self.body
