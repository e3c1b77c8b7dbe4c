"""The target Python starts in ONE place, neuron_env/target_python/ (read from the source, nothing
run): no other module builds a `PY -m/-c/-I ...` argv, calls inside.script(), or reads the
inside/ protocol itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "neuron_env"
TARGET = PKG / "target_python"
FLAGS = {"-m", "-c", "-I", "-E", "-P", "-S", "-s", "-u", "-X"}


def _outside() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py"))
            if TARGET not in p.parents and "inside" not in p.parts]


def _launches(node: ast.AST) -> bool:
    """`[python, "-m", ...]` / `(sys.executable, "-c", ...)` / `["python3", ...]`: an argv
    that starts an interpreter."""
    if not isinstance(node, ast.List | ast.Tuple) or not node.elts:
        return False
    first = node.elts[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return re.fullmatch(r".*/python[0-9.]*|python3[0-9.]*", first.value) is not None
    second = node.elts[1] if len(node.elts) > 1 else None
    return isinstance(second, ast.Constant) and second.value in FLAGS


def test_no_module_outside_target_starts_a_target_python():
    offenders = []
    for p in _outside():
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            call = isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                node.func, "attr", None)) == "script"
            if _launches(node) or call:
                offenders.append(f"{p.relative_to(REPO)}:{node.lineno}")
    assert offenders == [], "start target Pythons through neuron_env/target_python/ (launch.py)"


def test_only_target_reads_the_inside_protocol():
    """The step regex and the JSON marker are parsed in target_python/protocol.py alone."""
    offenders = []
    for p in _outside():
        text = p.read_text()
        if "@@STEP" in text or "@@CALL" in text or "@@ERROR" in text:
            offenders.append(str(p.relative_to(REPO)))
        for node in ast.walk(ast.parse(text, str(p))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "neuron_env.inside"):
                offenders.append(f"{p.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_the_detector_sees_the_launch_patterns():
    """The scan above can fail: each pattern it must catch, caught."""
    for src in ('[python, "-m", "pip"]', '(sys.executable, "-c", code)', '["python3", "x.py"]',
                '["/usr/bin/python3.11"]', '[py, "-I", "-X", "utf8"]'):
        assert _launches(ast.parse(src, mode="eval").body), src
    for src in ('["bash", "-c", cmd]', '[path, "-p", "efa"]', '["dmesg", "--ctime"]',
                '("python", "instances")'):
        assert not _launches(ast.parse(src, mode="eval").body), src
