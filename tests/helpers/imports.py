"""The import graph of the shipped Python (`neuron_env/` and the emulator, `backend/src`), read
from the source (nothing imported): module -> module arrows, the circles among them, and the
layer each package sits in. `tests/unit/test_shape.py` and `tests/unit/test_layers.py` hold it
to its rules; `benchmarks/house.py --layers` prints its figures.

LAYERS is THE declaration of the layer order (docs/architecture.md draws it, and
tests/unit/test_layers.py keeps the drawing equal to it)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# bottom first. A unit is a package folder of neuron_env (`util`), a top-level module of it
# (`errors`, `boundary`, `entry`, `__main__`), `neuron_env` itself (its __init__: the version)
# or the emulator (`neuron_emulator`). An import may only point at a unit of a LOWER row: not
# up, not sideways into another unit of the same row.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("neuron_emulator",),  # the emulated device: its own distribution, imports no neuron_env
    ("neuron_env", "errors"),  # the version; every deliberate error, with its exit code
    ("guards",),  # the invariants: the funnel, the one writer, the one reader, trust, masking
    ("util",),  # plain helpers: records, names, versions, wrapping, templates, progress
    ("inside", "report"),  # scripts run in the target; the result model and renderers
    ("target_python", "boundary"),  # the one target runner; the one boundary
    ("probes",),  # every fact read from the host and the target
    ("aws",),  # every boto3 call
    ("matrix",),  # the version matrix
    ("install", "scan", "smoke", "bundle", "bootstrap", "fleet", "collectives", "cost"),
    ("checks", "trial"),  # doctor's judgements (they ask install's planner); the trial
    ("commands",),  # each command's pipeline
    ("cli",),  # typer flag parsing
    ("entry",),  # the console script: doctor's common lines without typer, the rest to cli
    ("__main__",),  # python -m neuron_env
)


def sources(root: Path = REPO) -> dict[str, Path]:
    """module name -> file, for neuron_env/ and backend/src/neuron_emulator/."""
    out: dict[str, Path] = {}
    for base, pkg in ((root, "neuron_env"), (root / "backend" / "src", "neuron_emulator")):
        for p in sorted((base / pkg).rglob("*.py")):
            parts = list(p.relative_to(base).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _imported(node: ast.AST, me: str, is_init: bool, modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    mod = node.module or ""
    if node.level:  # relative: from . import x, from .sib import y
        base = me.split(".")
        base = base[:len(base) - node.level + (1 if is_init else 0)]
        mod = ".".join(base + ([mod] if mod else []))
    return [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]


def import_arrows(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """module -> the modules it imports. Every import counts: module-level, function-level (a
    deferred import still closes a circle when it runs) and under TYPE_CHECKING (the annotation
    still ties the two modules' designs together). `from pkg import name` points at pkg.name
    when that is a module, else at pkg (its __init__)."""
    modules = sources() if modules is None else modules
    arrows: dict[str, set[str]] = {m: set() for m in modules}
    for m, p in modules.items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            for name in _imported(node, m, p.name == "__init__.py", modules):
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != m:
                    arrows[m].add(name)
    return arrows


def import_circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(arrows.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(arrows):
        if v not in index:
            visit(v)
    return sorted(circles)


def unit(module: str) -> str:
    """The layer unit a module belongs to: neuron_env.report.text -> report,
    neuron_env.errors -> errors, neuron_env -> neuron_env, neuron_emulator._compile ->
    neuron_emulator."""
    parts = module.split(".")
    if parts[0] != "neuron_env":
        return parts[0]
    return parts[1] if len(parts) > 1 else "neuron_env"


def unit_arrows(arrows: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(from unit, to unit) -> the module arrows that make it, for units that differ."""
    out: dict[tuple[str, str], list[str]] = {}
    for m, targets in arrows.items():
        for t in sorted(targets):
            if unit(m) != unit(t):
                out.setdefault((unit(m), unit(t)), []).append(f"{m} -> {t}")
    return out


def rank() -> dict[str, int]:
    return {u: i for i, row in enumerate(LAYERS) for u in row}


def upward(arrows: dict[str, set[str]]) -> list[str]:
    """Every module arrow that does not point at a lower row of LAYERS (up, or sideways into
    another unit of the same row); a unit LAYERS does not place counts as upward too."""
    r = rank()
    return [f"{a} (row {r.get(ua, '?')}) -> {b} (row {r.get(ub, '?')})"
            for (ua, ub), pairs in sorted(unit_arrows(arrows).items())
            if ua not in r or ub not in r or r[ub] >= r[ua] for a, b in
            (p.split(" -> ") for p in pairs)]


def figures(root: Path = REPO) -> dict[str, int]:
    """The import graph in four numbers (and its size in modules)."""
    modules = sources(root)
    arrows = import_arrows(modules)
    circles = import_circles(arrows)
    ua = unit_arrows(arrows)
    return {"modules": len(modules), "module imports": sum(map(len, arrows.values())),
            "packages": len({unit(m) for m in modules}), "package arrows": len(ua),
            "upward package arrows": len({(a, b) for (a, b) in ua if _up(a, b)}),
            "upward module imports": len(upward(arrows)),
            "circles": len(circles), "modules in circles": sum(map(len, circles))}


def _up(a: str, b: str) -> bool:
    r = rank()
    return a not in r or b not in r or r[b] >= r[a]
