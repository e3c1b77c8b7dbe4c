"""Pure checks: (facts, matrix, context) -> Result. Reports list them in category order
(CATEGORIES in report/model.py), then in registration order; docs/doctor.md lists every check.

A check is one registered record (`CheckInfo` in checks/registry.py: id, category, title,
opt-in, docs) from which its results, `doctor --list-checks` and the docs table derive. A check
registers with `@check(id, category)` (its title: the docstring's first line); its results come
from `result(id, status, summary, ...)` (the category read from the record) or
`verdict(status, summary, ...)` (the registry fills id and category). `opt_in=True` checks
(instance.aws) and the device checks a command runs itself (checks/device.py: smoke.device,
collectives.all_reduce) run only when the command asks for them (doctor --aws, --smoke)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from neuron_env.errors import UsageError
from neuron_env.report.model import CATEGORIES, Result
from neuron_env.util.record import replace

if TYPE_CHECKING:  # annotations only: doctor imports neither for the registry's sake
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts


from neuron_env.checks.registry import BY_ID as BY_ID
from neuron_env.checks.registry import REGISTRY as REGISTRY
from neuron_env.checks.registry import Check as Check
from neuron_env.checks.registry import CheckFn as CheckFn
from neuron_env.checks.registry import CheckInfo as CheckInfo
from neuron_env.checks.registry import Context as Context
from neuron_env.checks.registry import check as check
from neuron_env.checks.registry import result as result
from neuron_env.checks.registry import verdict as verdict


def all_ids() -> list[str]:
    """The checks doctor runs by default (every registered one but the opt-in)."""
    return [c.id for c in registered() if not c.opt_in]


def registered() -> list[CheckInfo]:
    """Every check, opt-in ones included, in report order (THE list: --list-checks, the docs
    table and the schemas' tests read it)."""
    _load()
    return list(REGISTRY)


def _load() -> None:
    from neuron_env.checks import (  # noqa: F401  (they register)
        aws,
        backend,
        cache,
        companions,
        container,
        device,
        driver,
        host,
        lineage,
        network,
        stack,
        states,
        tools,
    )

    # report order is category order (instance, os, python, backend, driver), then definition
    order = list(CATEGORIES)
    REGISTRY.sort(key=lambda c: order.index(c.category) if c.category in order else len(order))


def select(only: list[str], skip: list[str], extra_ids: list[str] | tuple[str, ...] = ()
           ) -> list[str]:
    ids = all_ids()
    ids += [c.id for c in REGISTRY if c.opt_in and c.id in extra_ids]
    ids += [i for i in extra_ids if i not in ids]
    for name in [*only, *skip]:
        if name not in ids and not any(i.startswith(name + ".") for i in ids):
            import difflib  # (only for the message of a wrong name)

            known = ids + sorted({i.partition(".")[0] for i in ids})
            near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            guess = f"did you mean {near[0]!r}? " if near else ""
            raise UsageError(f"unknown check id {name!r}",
                             hint=f"{guess}known ids: {', '.join(ids)} (a category such as "
                                  "'driver' selects all its checks)")

    def match(i: str, names: list[str]) -> bool:
        return any(i == n or i.startswith(n + ".") for n in names)

    return [i for i in ids if (not only or match(i, only)) and not match(i, skip)]


def run_checks(facts: HostFacts, matrix: Matrix, ctx: Context, ids: list[str]) -> list[Result]:
    """Every check in `ids`; a rehearsal (the emulated backend, no Neuron device: see
    checks/rehearsal.py) is judged by the emulator's own rules."""
    from neuron_env.checks import rehearsal
    from neuron_env.matrix.model import family_of

    _load()
    out = []
    # per-family [[driver.apt]] rows: the checks see the row for this host's family
    matrix = matrix.for_family(family_of(facts.instance.type) if facts.instance.type else None)
    why = rehearsal.emulated(facts, matrix)
    for c in REGISTRY:
        id_, category, fn = c.id, c.category, c.fn
        if id_ not in ids or fn is None:  # fn None: its command runs it (checks/device.py)
            continue
        t0 = time.perf_counter()
        try:
            r = (rehearsal.judge(id_, category, facts, why, matrix) if why else None) \
                or fn(facts, matrix, ctx)
        except Exception as e:  # a bug in a check must not hide the rest of the report
            import traceback  # (~1.5 ms, with linecache and tokenize: only when one crashed)

            tb = traceback.format_exc(limit=-3)
            r = Result(id_, category, "error", f"check crashed: {type(e).__name__}: {e}",
                       fix="this is a neuron-env bug: please report it with the JSON report",
                       details={"traceback": tb})
        if not r.id:
            r = replace(r, id=id_, category=category)
        out.append(replace(r, duration_s=round(time.perf_counter() - t0, 6)))
    return out
