"""The check registry: `@check(id, category)`, the `Context` a check reads and `verdict`. Its
own module, so the check modules import it without importing the package that loads them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from neuron_env.report.model import Result
from neuron_env.util.record import record

if TYPE_CHECKING:  # annotations only: doctor imports neither for the registry's sake
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts


@record
class Context:
    python_flag: str | None = None  # as the user gave it, for fix commands
    matrix_flag: str | None = None
    index_overrides: dict[str, str] | None = None  # index name -> mirror URL (flags, env)
    own_prefix: str | None = None  # neuron-env's own environment (sys.prefix), for fix lines
    expect_efa: bool = False  # doctor --expect-efa: multi-node use intended (net.efa fails)
    # the known releases whose pairs admit the installed torch-neuronx, newest first
    # (matrix.catalog.releases_pairing); None: not looked up (the selected matrix pairs it)
    neuronx_releases: tuple[Any, ...] | None = None


class Check(Protocol):
    """What `@check` registers: (host facts, the matrix, the context) -> one Result (its id and
    category may be left empty: the registry fills them)."""

    def __call__(self, facts: HostFacts, m: Matrix, ctx: Context, /) -> Result: ...


CheckFn = TypeVar("CheckFn", bound=Check)


@record
class CheckInfo:
    """One check, declared once: results, `doctor --list-checks` (text and JSON), the docs table
    and `select()` are all derived from it (pre-commit's hook manifest, nox's registry)."""

    id: str
    category: str  # a key of CATEGORIES (report/model.py)
    title: str  # one line: what it checks; by default the check function's docstring's first
    opt_in: bool = False  # run only when an option asks (`flag`)
    flag: str | None = None  # the option that asks for an opt-in check (`--aws`)
    docs: str | None = None  # a URL, where the matrix's [docs] table has none for it
    fn: Check | None = None  # None: its command runs it (doctor's --smoke, --collectives)

    def result(self, status: str, summary: str, **kw: Any) -> Result:
        """A Result of this check: its id and category come from here."""
        return Result(self.id, self.category, status, summary, **kw)

    @property
    def about(self) -> str:
        """What `--list-checks` says: the title, and the option that asks for it."""
        return self.title + (f" ({self.flag})" if self.flag else "")


REGISTRY: list[CheckInfo] = []  # in registration order; checks._load() sorts it by category
BY_ID: dict[str, CheckInfo] = {}


def _first_line(doc: str | None) -> str:
    """A docstring's first line, without its full stop: the check's title."""
    lines = (doc or "").strip().splitlines()
    line = lines[0].strip() if lines else ""
    return line[:-1] if line.endswith(".") and not line.endswith("..") else line


def register(info: CheckInfo) -> CheckInfo:
    """Add one record; an id registered twice is a bug (two declarations of one fact)."""
    if info.id in BY_ID:
        raise ValueError(f"check {info.id!r} registered twice")
    REGISTRY.append(info)
    BY_ID[info.id] = info
    return info


def check(id: str, category: str, opt_in: bool = False, *, title: str | None = None,
          flag: str | None = None, docs: str | None = None) -> Callable[[CheckFn], CheckFn]:
    """`@check("driver.versions", "driver")` above a pure `(facts, matrix, ctx) -> Result`: the
    title is the function's docstring's first line unless `title=` says otherwise."""
    def deco(fn: CheckFn) -> CheckFn:
        register(CheckInfo(id, category, title or _first_line(fn.__doc__), opt_in, flag, docs,
                           fn))
        return fn
    return deco


def declare(id: str, category: str, title: str, *, flag: str, docs: str | None = None
            ) -> CheckInfo:
    """An opt-in check its command runs itself (doctor --smoke: smoke.device): registered for
    --list-checks, select() and the docs; `.result(...)` makes its results."""
    return register(CheckInfo(id, category, title, True, flag, docs, None))


def result(id: str, status: str, summary: str, **kw: Any) -> Result:
    """A Result of the registered check `id`, its category read from the registry (declared
    once, in `@check`): `result("os.arch", "pass", "x86_64")`."""
    return BY_ID[id].result(status, summary, **kw)


def verdict(status: str, summary: str, **kw: Any) -> Result:
    """A check's Result without id/category: `run_checks` fills them from the registry."""
    return Result("", "", status, summary, **kw)
