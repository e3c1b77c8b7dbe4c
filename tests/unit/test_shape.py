"""The shape the code keeps (read from the source, nothing run): one subprocess funnel, one
exception hierarchy, short functions, marked integration tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.imports import import_arrows, import_circles, sources

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "neuron_env"
EMULATOR = REPO / "backend" / "src" / "neuron_emulator"
SOURCES = sorted(PKG.rglob("*.py"))
# what the shape rules of length and circles cover: neuron_env/ and the emulator's source
SHIPPED = sorted(sources().values())


def _tree(p: Path) -> ast.Module:
    return ast.parse(p.read_text(), str(p))


def test_only_the_funnel_touches_subprocess():
    offenders = []
    for p in SOURCES:
        if p == PKG / "guards" / "proc.py":
            continue
        for node in ast.walk(_tree(p)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "subprocess" for n in names):
                offenders.append(str(p.relative_to(REPO)))
    assert offenders == [], "use neuron_env/guards/proc.py (the one funnel)"


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
            for p in SHIPPED for n in ast.walk(_tree(p))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.end_lineno - n.body[0].lineno + 1 > limit]
    assert long == []


def test_every_integration_module_is_marked():
    marked = re.compile(r"^pytestmark = .*pytest\.mark\.integration", re.M)
    unmarked = [p.name for p in sorted((REPO / "tests" / "integration").glob("test_*.py"))
                if not marked.search(p.read_text())]
    assert unmarked == []


# No circle is left, in neuron_env/ nor in the emulator (checks/ takes its registry from
# checks/registry.py; trial/collected.py holds what distributed.py and it share; the emulator's
# env flags, load state and version sit in _env.py, _state.py, _version.py below the modules
# that read them): a new one fails the test.
KNOWN_CIRCLES: list[list[str]] = []


def test_no_import_circles():
    assert import_circles(import_arrows()) == KNOWN_CIRCLES


def test_the_graph_covers_the_emulator():
    """backend/src counts: its modules are in the graph, with their relative and absolute
    imports (a circle there failed nothing before)."""
    arrows = import_arrows()
    assert "neuron_emulator._register" in arrows and "neuron_emulator._compile" in arrows
    assert "neuron_emulator._state" in arrows["neuron_emulator._compile"]
    assert any(p.is_relative_to(EMULATOR) for p in SHIPPED)


def test_the_install_steps_are_a_line():
    """execute.py makes the run and calls resolve -> apply -> verify; they take the shared
    types from install/run_state.py and none of them imports execute.py back."""
    arrows = import_arrows()
    back = sorted(m for m, to in arrows.items() if "neuron_env.install.execute" in to)
    assert back == ["neuron_env.commands.install"]
    assert not any(c for c in import_circles(arrows) if "neuron_env.install.execute" in c)


def test_import_circles_are_found():
    """The detector itself: a planted circle, a line, and a self-import."""
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_mypy_checks_the_whole_package_with_no_debt_list():
    """No module is let off: no ignore_errors block, no excluded folder, and CI runs mypy with
    that configuration (no paths of its own that would narrow it)."""
    from neuron_env.matrix.loader import toml

    cfg = toml().loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert cfg["files"] == ["neuron_env"]
    assert "exclude" not in cfg
    assert [o["module"] for o in cfg.get("overrides", []) if o.get("ignore_errors")] == []
    runs = [line.split("#")[0].split() for line in (REPO / ".ci" / "run").read_text().splitlines()
            if "-m mypy" in line]
    assert runs == [[".venv/bin/python", "-m", "mypy"]]
