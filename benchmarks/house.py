"""The shape of the house, measured from the source (nothing imported or run): module count,
import arrows between the top-level packages of neuron_env, the ten longest functions.

    python benchmarks/house.py            # the figures
    python benchmarks/house.py --edges    # and every package -> package arrow
    python benchmarks/house.py DIR        # another checkout's neuron_env/
    python benchmarks/house.py --layers [ROOT]  # the import graph of neuron_env/ and the
        # emulator against the layer order (tests/helpers/imports.py): packages, arrows
        # between them, upward ones, circles; ROOT: another checkout's repository root
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PKG = Path(next((a for a in sys.argv[1:] if not a.startswith("-")),
                Path(__file__).resolve().parents[1] / "neuron_env"))


def _package(parts: list[str]) -> str:
    """neuron_env.report.model -> report; neuron_env.errors -> (top)."""
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PKG / parts[1]).is_dir()) \
        else "(top)"


def _module(p: Path) -> list[str]:
    parts = ["neuron_env", *p.relative_to(PKG).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _targets(node: ast.AST, me: list[str], is_init: bool) -> list[list[str]]:
    if isinstance(node, ast.Import):
        return [a.name.split(".") for a in node.names if a.name.startswith("neuron_env")]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = me[: len(me) - node.level + (1 if is_init else 0)]
            return [base + (node.module.split(".") if node.module else [])]
        if (node.module or "").startswith("neuron_env"):
            return [node.module.split(".")]
    return []


def measure() -> tuple[int, set[tuple[str, str]], list[tuple[int, str]]]:
    mods = sorted(PKG.rglob("*.py"))
    edges: set[tuple[str, str]] = set()
    funcs: list[tuple[int, str]] = []
    for p in mods:
        me = _module(p)
        src = _package(me) if len(me) > 1 else "(top)"
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            for t in _targets(node, me, p.name == "__init__.py"):
                dst = _package(t) if len(t) > 1 else "(top)"
                if dst != src:
                    edges.add((src, dst))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                funcs.append((node.end_lineno - node.lineno + 1, f"{'.'.join(me)}:{node.name}"))
    return len(mods), edges, sorted(funcs, reverse=True)[:10]


def layers() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.helpers import imports

    root = Path(next((a for a in sys.argv[1:] if not a.startswith("-")),
                     Path(__file__).resolve().parents[1]))
    for k, v in imports.figures(root).items():
        print(f"{k}: {v}")
    arrows = imports.import_arrows(imports.sources(root))
    for line in imports.upward(arrows):
        print(f"  upward: {line}")
    for circle in imports.import_circles(arrows):
        print(f"  circle: {' '.join(circle)}")


def main() -> None:
    if "--layers" in sys.argv:
        layers()
        return
    n, edges, funcs = measure()
    print(f"modules: {n}")
    print(f"package -> package import arrows: {len(edges)}")
    print("longest functions (lines, def to end):")
    for lines, name in funcs:
        print(f"  {lines:4d}  {name}")
    if "--edges" in sys.argv:
        for a, b in sorted(edges):
            print(f"  {a} -> {b}")


if __name__ == "__main__":
    main()
