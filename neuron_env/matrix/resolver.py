"""Pure: pick the backend pair and exact requirement strings for a target, or say why none fits."""

from __future__ import annotations

from neuron_env.errors import ResolutionError
from neuron_env.matrix.model import Matrix, Pair, fmt_spec
from neuron_env.util.record import record
from neuron_env.util.versions import Ver


@record
class Resolution:
    pair: Pair


def _minor(text: str) -> str:
    try:
        v = Ver(text)
    except ValueError:
        raise ResolutionError(f"--torch {text!r} is not a version such as 2.14 or 2.13",
                              hint="use --torch 2.14 or --torch 2.13") from None
    return f"{v.major}.{v.minor}"


def resolve(matrix: Matrix, python_version: str, torch: str | None = None) -> Resolution:
    """The pair for `python_version` ('3.12.4') and optional torch minor ('2.14'), newest first."""
    minors = ", ".join(p.torch_minor for p in matrix.pairs_newest_first())
    if not matrix.python.contains(python_version, prereleases=True):
        raise ResolutionError(
            f"Python {python_version} is outside Neuron {matrix.release}'s range "
            f"{fmt_spec(matrix.python)}",
            hint=f"use an interpreter in {fmt_spec(matrix.python)} (--python PATH)")
    candidates = matrix.pairs_newest_first()
    if torch is not None:
        want = _minor(torch)
        candidates = [p for p in candidates if p.torch_minor == want]
        if not candidates:
            raise ResolutionError(
                f"Neuron {matrix.release} has no backend pair for torch {want} "
                f"(it pairs torch {minors})", hint=f"choose one of: {minors}")
    fitting = [p for p in candidates if p.supports_python(python_version)]
    if not fitting:
        ranges = "; ".join(f"torch {p.torch}: Python {fmt_spec(p.python)}" for p in candidates)
        raise ResolutionError(
            f"no backend pair of Neuron {matrix.release} supports Python {python_version} "
            f"({ranges})", hint="choose another interpreter or --torch")
    return Resolution(pair=fitting[0])
