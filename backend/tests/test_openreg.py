"""PyTorch's OpenReg (out-of-tree PrivateUse1 backend) test cases, adapted to `neuron`."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.integration
NAMES = [n.name for n in ast.parse((HERE / "openreg_scenarios.py").read_text()).body
         if isinstance(n, ast.FunctionDef) and any(
             isinstance(d, ast.Name) and d.id == "scenario" for d in n.decorator_list)]


@pytest.fixture(scope="session")
def openreg_results(torch_python):
    env = dict(os.environ, NEURON_EMULATOR_DEVICES="2", PYTHONPATH=str(HERE))
    p = subprocess.run([torch_python, str(HERE / "openreg_scenarios.py")], capture_output=True,
                       text=True, timeout=600, env=env)
    assert "@@SCENARIOS@@" in p.stdout, p.stderr[-3000:]
    return json.loads(p.stdout.split("@@SCENARIOS@@")[1])


@pytest.mark.parametrize("name", NAMES)
def test_openreg_case(openreg_results, name):
    r = openreg_results[name]
    assert r["ok"], r["error"]
