"""Pure: contradictions inside a matrix that each field alone does not show. An empty Python
range, a pair whose range lies outside the release's, two pairs on one torch-neuronx family, a
`release` that is not the one the file name says, a placeholder that is also a real version.
(Parsing: matrix/loader.py; references between sections: matrix/references.py.)"""

from __future__ import annotations

import re
from pathlib import Path

from neuron_env.matrix.model import Matrix
from neuron_env.util.names import canonicalize_name
from neuron_env.util.versions import Spec, Ver

_FILE = re.compile(r"^neuron-(\d+(?:\.\d+)*)\.toml$")


def _candidates(*specs: Spec | None) -> list[Ver]:
    """Versions that decide whether specifier sets meet: every bound they name, its next
    micro, and a grid of 2.0-4.40 (enough for Python ranges; bounds cover the rest)."""
    out = {Ver(f"{a}.{b}") for a in (2, 3, 4) for b in range(41)}
    for spec in specs:
        for s in spec or ():
            v = s.version.removesuffix(".*")
            try:
                base = Ver(v)
            except ValueError:
                continue
            rel = list(base.release) + [0] * (3 - len(base.release))
            out |= {base, Ver(".".join(map(str, [*rel[:-1], rel[-1] + 1])))}
    return sorted(out)


def satisfiable(*specs: Spec | None) -> bool:
    """Whether one version satisfies every given set (None: no constraint)."""
    want = [s for s in specs if s is not None]
    return any(all(s.contains(v, prereleases=True) for s in want) for v in _candidates(*want))


def semantic_problems(m: Matrix, source: str) -> list[tuple[str, str]]:
    """(key path, message) for each contradiction."""
    out = []
    if not satisfiable(m.python):
        out.append(("python.requires", f"{m.python} admits no Python version at all"))
    fams: dict[str, int] = {}
    for i, p in enumerate(m.pairs):
        if p.python is not None and not satisfiable(p.python):
            out.append((f"pairs[{i}].python", f"{p.python} admits no Python version at all"))
        elif p.python is not None and not satisfiable(m.python, p.python):
            out.append((f"pairs[{i}].python", f"{p.python} shares no Python version with the "
                        f"release's range {m.python}"))
        for j, q in list(fams.items()):
            if satisfiable(p.torch_neuronx, m.pairs[q].torch_neuronx):
                out.append((f"pairs[{i}].torch_neuronx", f"{p.torch_neuronx} overlaps pairs[{q}] "
                            f"({j}): two torch versions for one torch-neuronx family"))
        fams[str(p.torch_neuronx)] = i
    mt = _FILE.match(Path(source).name)
    if mt and m.release and Ver(mt.group(1)) != Ver(m.release):
        out.append(("release", f"release {m.release!r} in a file named for {mt.group(1)}: "
                    "rename the file or fix the release"))
    out += _placeholder_problems(m)
    out += _companion_problems(m)
    return out


def _companion_problems(m: Matrix) -> list[tuple[str, str]]:
    """[[torch_companions]] that contradict the matrix or each other: a torch minor no pair
    has, a spec that admits no version, one pinned build claimed for two torch minors."""
    out = []
    minors = {p.torch_minor for p in m.pairs}
    for i, c in enumerate(m.torch_companions):
        if minors and c.torch not in minors:
            out.append((f"torch_companions[{i}].torch", f"no [[pairs]] entry has torch "
                        f"{c.torch} (pairs: {', '.join(sorted(minors))}): a pairing for a torch "
                        "this release does not install"))
        if c.spec and not satisfiable(c.spec):
            out.append((f"torch_companions[{i}].spec", f"{c.spec} admits no version at all"))
        for j, other in enumerate(m.torch_companions[:i]):
            if (canonicalize_name(other.name) == canonicalize_name(c.name)
                    and other.torch != c.torch and _one_build(c.spec) and _one_build(other.spec)
                    and satisfiable(c.spec, other.spec)):
                out.append((f"torch_companions[{i}].spec", f"{c.name}{c.spec} for torch "
                            f"{c.torch} overlaps torch_companions[{j}] ({other.spec} for torch "
                            f"{other.torch}): one {c.name} build is linked against one torch"))
    return out


def _placeholder_problems(m: Matrix) -> list[tuple[str, str]]:
    real: dict[str, list[Spec]] = {"torch-neuronx": [p.torch_neuronx for p in m.pairs],
                                   "torch": [Spec(f"=={p.torch}") for p in m.pairs]}
    for c in m.companions:
        real.setdefault(canonicalize_name(c.name), []).append(c.spec)
    out = []
    for i, ph in enumerate(m.placeholders):
        for spec in real.get(canonicalize_name(ph.name), []):
            if _pins(spec) and spec.contains(ph.version, prereleases=True):
                out.append((f"placeholders[{i}].version", f"{ph.name} {ph.version} is both a "
                            f"placeholder and a real version ({spec}): one of them is wrong"))
    return out


def _pins(spec: Spec) -> bool:
    """Whether spec names real versions closely (==X.Y.Z or a family ==X.Y.*), not a loose
    range such as ==0.* that a placeholder may well fall in."""
    return any(s.operator in ("==", "===") and s.version.removesuffix(".*").count(".") >= 2
               for s in spec)


def _one_build(spec: Spec) -> bool:
    """Whether spec names one release line (==0.28.*, ==0.28.1): a companion build."""
    return any(s.operator in ("==", "===") and s.version.removesuffix(".*").count(".") >= 1
               for s in spec)
