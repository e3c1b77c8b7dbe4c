"""Real models on the emulator (tiny HF GPT-2/BERT/Llama, a Llama-style block, a ResNet block)
against the CPU, and the op-support data (ops_2.33.json, NEURON_EMULATOR_OPS)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src" / "neuron_emulator"
pytestmark = pytest.mark.integration
NAMES = [n.name for n in ast.parse((HERE / "model_scenarios.py").read_text()).body
         if isinstance(n, ast.FunctionDef) and any(
             isinstance(d, ast.Name) and d.id == "scenario" for d in n.decorator_list)]


def _run(python: str, script: str, *args: str, env: dict | None = None,
         timeout: float = 900) -> dict:
    e = dict(os.environ, PYTHONPATH=str(HERE), **(env or {}))
    p = subprocess.run([python, "-W", "ignore", str(HERE / script), *args], capture_output=True,
                       text=True, timeout=timeout, env=e)
    assert "@@SCENARIOS@@" in p.stdout, p.stderr[-3000:]
    return json.loads(p.stdout.split("@@SCENARIOS@@")[1])


@pytest.fixture(scope="session")
def model_results(hf_python):
    return _run(hf_python, "model_scenarios.py")


@pytest.mark.parametrize("name", NAMES)
def test_model_case(model_results, name):
    r = model_results[name]
    assert r["ok"], r["error"]


def test_every_unsupported_op_names_its_source():
    data = json.loads((SRC / "ops_2.33.json").read_text())
    ops = [e["op"] for e in data["unsupported"]]
    assert ops and len(ops) == len(set(ops))
    for e in data["unsupported"]:
        assert set(e) == {"op", "source", "cite"} and e["source"].strip(), e
        assert e["source"].split(":")[0] in data["sources"], e
        assert e["cite"] == data["sources"][e["source"].split(":")[0]], e
    # what the docs list as supported must not be in it (CNNs, SDPA's decomposition)
    documented = {"convolution", "native_batch_norm", "max_pool2d_with_indices",
                  "avg_pool2d", "_adaptive_avg_pool2d", "hardswish", "hardsigmoid", "sin",
                  "cos", "tril", "all", "_safe_softmax", "select", "slice"}
    assert not documented & set(ops)


def test_autocast_policy_is_data_with_a_source():
    policy = json.loads((SRC / "autocast_policy.json").read_text())
    assert "autocast_mode.cpp" in policy["source"]
    for op in ("scaled_dot_product_attention", "linear", "matmul", "bmm", "baddbmm", "addmm",
               "conv2d"):
        assert op in policy["lower_precision_fp"]
    assert "mse_loss" in policy["fp32"] and "index_put" in policy["promote"]
    assert "softmax.int" in policy["fp32_set_opt_dtype"] and "binary_cross_entropy" in \
        policy["banned"]  # the generic (CUDA-style) lists, not CPU's


CUSTOM_OPS = """
import warnings, torch, neuron_emulator
x = torch.randn(4, 4, device="neuron")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.sin(x); torch.cumprod(x, 0); torch.tril(x)
    w = torch.randn(2, 1, 3, 3, device="neuron", requires_grad=True)
    torch.nn.functional.conv2d(x.view(1, 1, 4, 4), w).relu().sum().backward()
print(neuron_emulator.get_fallback_ops())
"""


def test_a_custom_op_set_makes_a_chosen_op_fall_back(torch_python, tmp_path):
    ops = tmp_path / "strict.json"
    ops.write_text(json.dumps({"unsupported": [
        {"op": "sin", "source": "assumed: a stricter release, for this test"},
        {"op": "convolution", "source": "assumed: convolution_backward follows it"}]}))
    run = lambda env: subprocess.run(  # noqa: E731
        [torch_python, "-c", CUSTOM_OPS], capture_output=True, text=True, timeout=300,
        env=dict(os.environ, **env))
    p = run({"NEURON_EMULATOR_OPS": str(ops)})
    assert p.returncode == 0, p.stderr[-2000:]
    want = "['aten::convolution', 'aten::convolution_backward', 'aten::sin']"
    assert p.stdout.strip() == want, p.stdout  # cumprod is native in that set
    p = run({})
    assert p.stdout.strip() == "['aten::cumprod']", (p.stdout, p.stderr[-2000:])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"unsupported": [{"op": "sin", "source": ""}]}))
    p = run({"NEURON_EMULATOR_OPS": str(bad)})
    assert "entry 0 needs a non-empty 'op' and 'source'" in p.stderr + p.stdout, p.stderr
