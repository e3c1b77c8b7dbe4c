"""Pure checks: (facts, matrix, context) -> Result. The registry keeps DESIGN.md's order."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

from neuron_env.errors import UsageError
from neuron_env.report.model import CATEGORIES, Result


@dataclass(frozen=True)
class Context:
    python_flag: str | None = None  # as the user gave it, for fix commands
    matrix_flag: str | None = None
    index_overrides: dict | None = None  # index name -> mirror URL (flags, environment)


CheckFn = Callable[..., Result]
REGISTRY: list[tuple[str, str, CheckFn]] = []


def check(id: str, category: str) -> Callable[[CheckFn], CheckFn]:
    def deco(fn: CheckFn) -> CheckFn:
        REGISTRY.append((id, category, fn))
        return fn
    return deco


def all_ids() -> list[str]:
    _load()
    return [i for i, _, _ in REGISTRY]


def _load() -> None:
    from neuron_env.checks import (  # noqa: F401  (they register)
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
    ids = all_ids() + list(extra_ids)
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
        try:
            r = fn(facts, matrix, ctx)
        except Exception as e:  # a bug in a check must not hide the rest of the report
            tb = traceback.format_exc(limit=-3)
            r = Result(id_, category, "error", f"check crashed: {type(e).__name__}: {e}",
                       fix="this is a neuron-env bug: please report it with the JSON report",
                       details={"traceback": tb})
        out.append(r)
    return out
