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
REGISTRY: list[tuple[str, str, Check]] = []
OPT_IN: set[str] = set()  # registered, but run only when asked (extra ids)


def check(id: str, category: str, opt_in: bool = False) -> Callable[[CheckFn], CheckFn]:
    def deco(fn: CheckFn) -> CheckFn:
        REGISTRY.append((id, category, fn))
        if opt_in:
            OPT_IN.add(id)
        return fn
    return deco


def verdict(status: str, summary: str, **kw: Any) -> Result:
    """A check's Result without id/category: `run_checks` fills them from the registry."""
    return Result("", "", status, summary, **kw)
