"""Pure checks: (facts, matrix, context) -> Result. The registry keeps DESIGN.md's order.

A check registers with `@check(id, category)`; its Result may leave id and category out
(`verdict(status, summary, ...)`): the registry fills them. `opt_in=True` checks (instance.aws)
run only when the command asks for them (doctor --aws)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

from neuron_env.errors import UsageError
from neuron_env.report.model import CATEGORIES, Result
from neuron_env.util.record import record, replace


@record
class Context:
    python_flag: str | None = None  # as the user gave it, for fix commands
    matrix_flag: str | None = None
    index_overrides: dict | None = None  # index name -> mirror URL (flags, environment)
    own_prefix: str | None = None  # neuron-env's own environment (sys.prefix), for fix lines
    multi_node: str | None = None  # why this host is meant for multi-node work (net.efa)


CheckFn = Callable[..., Result]
REGISTRY: list[tuple[str, str, CheckFn]] = []
OPT_IN: set[str] = set()  # registered, but run only when asked (extra ids)


def check(id: str, category: str, opt_in: bool = False) -> Callable[[CheckFn], CheckFn]:
    def deco(fn: CheckFn) -> CheckFn:
        REGISTRY.append((id, category, fn))
        if opt_in:
            OPT_IN.add(id)
        return fn
    return deco


def verdict(status: str, summary: str, **kw) -> Result:
    """A check's Result without id/category: `run_checks` fills them from the registry."""
    return Result("", "", status, summary, **kw)


def all_ids() -> list[str]:
    _load()
    return [i for i, _, _ in REGISTRY if i not in OPT_IN]


def _load() -> None:
    from neuron_env.checks import (  # noqa: F401  (they register)
        aws,
        backend,
        cache,
        container,
        driver,
        host,
        lineage,
        network,
        tools,
    )

    # report order is category order (instance, os, python, backend, driver), then definition
    order = list(CATEGORIES)
    REGISTRY.sort(key=lambda e: order.index(e[1]) if e[1] in order else len(order))


def select(only: list[str], skip: list[str], extra_ids: list[str] = ()) -> list[str]:
    ids = all_ids()
    ids += [i for i, _, _ in REGISTRY if i in OPT_IN and i in extra_ids]
    ids += [i for i in extra_ids if i not in ids]
    for name in [*only, *skip]:
        if name not in ids and not any(i.startswith(name + ".") for i in ids):
            raise UsageError(f"unknown check id {name!r}",
                             hint=f"known ids: {', '.join(ids)} (a category such as "
                                  "'driver' selects all its checks)")

    def match(i: str, names: list[str]) -> bool:
        return any(i == n or i.startswith(n + ".") for n in names)

    return [i for i in ids if (not only or match(i, only)) and not match(i, skip)]


def run_checks(facts, matrix, ctx: Context, ids: list[str]) -> list[Result]:
    _load()
    out = []
    for id_, category, fn in REGISTRY:
        if id_ not in ids:
            continue
        t0 = time.perf_counter()
        try:
            r = fn(facts, matrix, ctx)
        except Exception as e:  # a bug in a check must not hide the rest of the report
            tb = traceback.format_exc(limit=-3)
            r = Result(id_, category, "error", f"check crashed: {type(e).__name__}: {e}",
                       fix="this is a neuron-env bug: please report it with the JSON report",
                       details={"traceback": tb})
        if not r.id:
            r = replace(r, id=id_, category=category)
        out.append(replace(r, duration_s=round(time.perf_counter() - t0, 6)))
    return out
