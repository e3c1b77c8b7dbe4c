"""Issue 37's fidelity items (fidelity_scenarios.py) and the real models that need them
(fidelity_models.py: tiny HF Mixtral, Qwen2-MoE, BEiT, Mistral, DeBERTa-v2, Whisper built in
code, nothing downloaded), each scenario against the emulator in a real torch venv."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.integration


def _names(script: str) -> list[str]:
    return [n.name for n in ast.parse((HERE / script).read_text()).body
            if isinstance(n, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "scenario" for d in n.decorator_list)]


def _run(python: str, script: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(HERE))
    for k in [k for k in env if k.startswith(("TORCH_NEURONX_", "NEURON_EMULATOR_"))]:
        del env[k]  # the scenarios set what they test
    p = subprocess.run([python, "-W", "ignore", str(HERE / script)], capture_output=True,
                       text=True, timeout=900, env=env)
    assert "@@SCENARIOS@@" in p.stdout, p.stderr[-3000:]
    return json.loads(p.stdout.split("@@SCENARIOS@@")[1])


@pytest.fixture(scope="session")
def fidelity_results(torch_python):
    return _run(torch_python, "fidelity_scenarios.py")


@pytest.fixture(scope="session")
def fidelity_model_results(hf_python):
    return _run(hf_python, "fidelity_models.py")


@pytest.mark.parametrize("name", _names("fidelity_scenarios.py"))
def test_fidelity(fidelity_results, name):
    r = fidelity_results[name]
    assert r["ok"], r["error"]


@pytest.mark.parametrize("name", _names("fidelity_models.py"))
def test_fidelity_model(fidelity_model_results, name):
    r = fidelity_model_results[name]
    assert r["ok"], r["error"]
