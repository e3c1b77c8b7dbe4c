"""Pure: references between a matrix's sections. Every `source = ...` names a declared
[[sources]] id. Asked while the matrix is parsed (matrix/loader.py), on doctor's warm path too,
so it stays apart from the heavier cross-field semantics (matrix/semantics.py)."""

from __future__ import annotations

from neuron_env.matrix.model import Driver, InstanceFamily, OSEntry, Source


def source_ref_problems(sources: tuple[Source, ...], instances: tuple[InstanceFamily, ...],
                        oses: tuple[OSEntry, ...], driver: Driver) -> list[tuple[str, str]]:
    """Every `source = ...` reference names a declared [[sources]] id (the loader asks this
    while it parses, so these problems are reported with the structural ones)."""
    ids = {s.id for s in sources}
    out: list[tuple[str, str]] = []

    def ref(path: str, value: str | None) -> None:
        if value and value not in ids:
            out.append((path, f"source {value!r} is not declared in [[sources]] "
                              f"(declared: {', '.join(sorted(ids)) or 'none'})"))

    for i, f in enumerate(instances):
        for j, t in enumerate(f.types):
            ref(f"instances[{i}].types[{j}].source", t.source)
    for i, o in enumerate(oses):
        ref(f"os[{i}].source", o.source)
        ref(f"os[{i}].disputed_source", o.disputed_source)
    for i, a in enumerate(driver.apt):
        ref(f"driver.apt[{i}].source", a.source)
    return out
