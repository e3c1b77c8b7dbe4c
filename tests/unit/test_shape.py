"""The shape the code keeps (read from the source, nothing run): one subprocess funnel, one
exception hierarchy, short functions, marked integration tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "neuron_env"
SOURCES = sorted(PKG.rglob("*.py"))


def _tree(p: Path) -> ast.Module:
    return ast.parse(p.read_text(), str(p))


def test_only_the_funnel_touches_subprocess():
    offenders = []
    for p in SOURCES:
        if p == PKG / "util" / "proc.py":
            continue
        for node in ast.walk(_tree(p)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "subprocess" for n in names):
                offenders.append(str(p.relative_to(REPO)))
    assert offenders == [], "use neuron_env/util/proc.py (the one funnel)"


def test_every_exception_lives_in_errors_py():
    errors = {n.name for n in ast.walk(_tree(PKG / "errors.py")) if isinstance(n, ast.ClassDef)}
    stray = []
    for p in SOURCES:
        if p.name == "errors.py" or "inside" in p.parts:
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if bases & {"Exception", "BaseException", "RuntimeError", "ValueError"} or \
                        (bases & errors and node.name.endswith(("Error", "Failed"))):
                    stray.append(f"{p.relative_to(REPO)}:{node.name}")
    assert stray == []


@pytest.mark.parametrize("limit", [60])
def test_functions_stay_short(limit):
    """Bodies, counted from the first statement (a typer command's option list is a
    declaration, not logic)."""
    long = [f"{p.relative_to(REPO)}:{n.lineno} {n.name} ({n.end_lineno - n.body[0].lineno + 1})"
            for p in SOURCES for n in ast.walk(_tree(p))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.end_lineno - n.body[0].lineno + 1 > limit]
    assert long == []


def test_every_integration_module_is_marked():
    marked = re.compile(r"^pytestmark = .*pytest\.mark\.integration", re.M)
    unmarked = [p.name for p in sorted((REPO / "tests" / "integration").glob("test_*.py"))
                if not marked.search(p.read_text())]
    assert unmarked == []
