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


REPO = HERE.parent.parent
SHIPPED = [HERE.parent / "src", HERE.parent / "README.md", HERE.parent / "pyproject.toml",
           HERE.parent / "tools", REPO / "docs" / "emulator.md"]
# spelt in pieces, so this file does not name them itself (the repository's own check reads it)
MACHINE_PATHS = tuple(a + b for a, b in (("/wo", "rk/"), ("/tm", "p/"), ("/ho", "me/"),
                                          ("../sh", "ared")))
DOCUMENTED = ("/tmp/neuron_backend",)  # TORCH_NEURONX_DEBUG_DIR's default on the env-vars page


def test_op_table_is_generated_with_a_citation_per_row():
    """Item 11: ops_2.33.json is gen_ops.py's output, and every row cites a public URL (or a
    public repository and commit)."""
    import importlib.util
    import re

    spec = importlib.util.spec_from_file_location("gen_ops", HERE.parent / "tools" / "gen_ops.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (HERE.parent / "src" / "neuron_emulator" / "ops_2.33.json").read_text() == \
        gen.render(), "ops_2.33.json differs from backend/tools/gen_ops.py: rerun it"
    public = re.compile(r"^(https://\S+|[\w.-]+/[\w.-]+@[0-9a-f]{40})$")
    for row in gen.build()["unsupported"]:
        assert public.match(row["cite"]), row


def test_no_shipped_file_names_a_machine_path():
    """Item 13: no shipped emulator file (source, data, docs, tools) names a path of the
    machine it was written on."""
    files = [f for p in SHIPPED for f in ([p] if p.is_file() else p.rglob("*"))
             if f.is_file() and "__pycache__" not in f.parts and ".egg-info" not in str(f)]
    def text(f):
        t = f.read_text(encoding="utf-8", errors="replace")
        for d in DOCUMENTED:
            t = t.replace(d, "")
        return t
    bad = [(str(f.relative_to(REPO)), m) for f in files for m in MACHINE_PATHS if m in text(f)]
    assert files and not bad, bad
