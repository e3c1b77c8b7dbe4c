"""`neuron-env trial` on real architectures (tiny Hugging Face configs built in code, no
download) on the emulated device: true verdicts that agree with a hand-written torch.allclose,
reduced precision judged against the CPU at the same dtype, train-mode dropout, keyword inputs,
ModelOutput/dataclass outputs, fallbacks traced to their source lines, the first diverging
module of a planted bug, crash/compile advice. The libraries come from `models_python`."""

from __future__ import annotations

import json
import subprocess

import jsonschema
import pytest

from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.models import need_lib

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/trial.schema.json").read_text())
REAL = "tests/fixtures/trial/real_models.py"
USER = "tests/fixtures/trial/user_models.py"


def trial(py, *args, fault=None, fmt="json", timeout=400):
    p = run_cli("trial", *args, "--python", py, "--format", fmt, "--iterations", "2",
                env=cli_env(NEURON_EMULATOR_FAULT=fault), timeout=timeout)
    if fmt != "json":
        return p
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == p.returncode, p.stderr
    return doc, {r["id"].split(".", 1)[1]: r for r in doc.get("results", [])}


def by_hand(py, model: str, *flags: str) -> dict:
    """The hand-written torch.allclose check (tests/fixtures/trial/allclose_check.py)."""
    r = subprocess.run([py, str(REPO / "tests/fixtures/trial/allclose_check.py"), model,
                        "neuron", *flags], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name, hand_flags", [
    ("bert", ["--eval"]),  # built from a config: train mode, dropout 0.1 -> compared in eval
    ("vit", []), ("gpt2", []), ("dataclass_output", []), ("bert_planted_bug", []),
])
def test_float32_verdicts_agree_with_a_hand_written_allclose(models_python, name, hand_flags):
    py = need_lib(models_python, "transformers")
    doc, r = trial(py, f"{REAL}:{name}")
    e = r["eager"]["details"]
    hand = by_hand(py, f"{REAL}:{name}", *hand_flags)
    assert (r["eager"]["status"] == "pass") == e["ok"] == hand["ok"], (r["eager"], hand)
    assert e["tensors"] == hand["tensors"] and e["rule"] == "allclose"
    if name != "bert_planted_bug":
        assert doc["exit_code"] == 0 and "tensors match within rtol=0.001 atol=1e-05" in \
            r["eager"]["summary"] and "MISMATCH" not in r["eager"]["summary"]


def test_train_mode_dropout_is_compared_in_eval_mode_and_said(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:bert", "--steps", "1")
    d = r["dtype"]["details"]
    assert d["mode"] == "eval" and "embeddings.dropout" in d["stochastic"]
    assert not any(s.startswith("config.") for s in d["stochastic"])  # found by running
    assert "both sides compared in EVAL mode" in r["dtype"]["summary"]
    assert r["eager"]["status"] == "pass" and r["steps"]["status"] == "pass"
    # the near-zero gradient of the key bias (mathematically 0) passes element-wise
    assert r["eager"]["details"]["mismatched_tensors"] == 0
    # an eval-mode model is left as it is
    _doc, r = trial(py, f"{REAL}:bert_eval")
    assert r["dtype"]["details"]["stochastic"] == [] and "EVAL" not in r["dtype"]["summary"]


def test_bfloat16_is_judged_against_the_cpu_at_bfloat16(models_python):
    py = need_lib(models_python, "transformers")
    doc, r = trial(py, f"{REAL}:bert_eval", "--dtype", "bfloat16")
    e = r["eager"]
    assert doc["exit_code"] == 0 and e["details"]["rule"] == "low_precision", e
    w = e["details"]["worst_detail"]
    assert w["cpu_error"] > 0 and w["max_abs_error"] <= w["allowed_error"]
    assert "within 2x the CPU's own error at this dtype" in e["summary"]
    assert "MISMATCH" not in e["summary"] and "CPU bfloat16 run too" in r["reference"]["summary"]
    # on the CPU itself the device IS the CPU at bfloat16: never a mismatch
    doc, r = trial(py, f"{REAL}:vit", "--device", "cpu", "--dtype", "bfloat16")
    assert r["eager"]["status"] == "pass" and doc["exit_code"] == 0
    # the rule is not vacuous: a perturbed device fails at bfloat16 too, both errors shown
    doc, r = trial(py, "builtin:mlp", "--dtype", "bfloat16", fault="perturb")
    assert r["eager"]["status"] == "fail" and "vs the CPU's own" in r["eager"]["summary"]


def test_keyword_inputs_model_output_and_dataclass_fields(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:gpt2")
    ref = r["reference"]["details"]
    assert "output[logits]" in ref["outputs"]
    assert {"output": "output[past_key_values]", "type": "DynamicCache"} in \
        ref["skipped_outputs"] or any(s["type"] == "DynamicCache"
                                      for s in ref["skipped_outputs"]), ref
    assert "not compared (not tensors)" in r["reference"]["summary"]
    _doc, r = trial(py, f"{REAL}:dataclass_output")
    ref = r["reference"]["details"]
    assert set(ref["outputs"]) == {"output[logits]", "output[features]"}
    assert ref["skipped_outputs"] == [{"output": "output[note]", "type": "str"}]
    assert r["eager"]["status"] == "pass" and r["eager"]["details"]["tensors"] == 7


def test_the_first_diverging_module_of_a_planted_bug_is_named(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:bert_planted_bug")
    e = r["eager"]
    div = e["details"]["first_divergence"]
    assert div["module"] == "encoder.layer.1.intermediate.intermediate_act_fn", div
    assert div["module_type"] == "DeviceOnlyShift" and abs(div["max_abs_error"] - 0.05) < 1e-3
    assert "largest output difference output[last_hidden_state]" in e["summary"]
    assert "start at module encoder.layer.1.intermediate.intermediate_act_fn" in e["fix"]


def test_fallback_ops_are_traced_to_the_users_source_line(torch_python):
    _doc, r = trial(torch_python, f"{USER}:cumulative")
    src = r["fallback"]["details"]["sources"]
    assert any("user_models.py:" in s and "torch.cumprod(self.lin(x), dim=-1)" in s
               for s in src["aten::cumprod"]), src
    assert "(at tests/fixtures/trial/user_models.py:" in r["fallback"]["summary"]


def test_advice_follows_the_failure(torch_python):
    _doc, r = trial(torch_python, f"{USER}:crashes_on_device")
    e = r["eager"]
    assert e["status"] == "fail" and "CRASHED" in e["summary"] and e["details"]["crashed"]
    assert "user_models.py:" in e["summary"] and "torch.ones(8)" in e["summary"]
    assert "--rtol" not in e["fix"] and "`.to(out.device)`" in e["fix"]
    tb = e["details"]["error"]
    assert "user_models.py" in tb and tb.index("user_models.py") > tb.index("innermost")
    _doc, r = trial(torch_python, f"{USER}:fails_on_cpu")
    assert r["reference"]["status"] == "fail" and "user_models.py:" in r["reference"]["summary"]
    assert r["fallback"]["summary"].endswith("not run: the CPU reference failed, so the device "
                                             "run did not start")
    assert "no op-tracking API" not in r["fallback"]["summary"]


def test_compile_failure_says_root_cause_and_user_line_and_sweeps_in_eager(torch_python):
    p = trial(torch_python, f"{USER}:untraceable", "--device", "cpu", "--compile",
              "--batch-sizes", "2,8", fmt="text")
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    assert "failed while tracing the model" in out and "no fake impl registered" in out
    assert "; at tests/fixtures/trial/user_models.py:" in out  # the user's line, in text
    assert "`return _opaque(self.lin(x))`" in out
    assert "aot_eager to tell" not in out  # tracing fails under every backend: not offered
    assert "2 shapes ran in EAGER mode because torch.compile failed" in out
    assert "Shapes (EAGER: torch.compile failed)" in out


def test_inference_runs_forward_only_in_eval_mode(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:bert", "--inference")
    e = r["eager"]
    assert e["status"] == "pass" and e["details"]["tensors"] == 2  # outputs only: no grads
    assert e["summary"].startswith("[EMULATED] forward on neuron")
    assert r["dtype"]["details"]["inference"] and "--inference" in r["dtype"]["summary"]
    p = run_cli("trial", "builtin:mlp", "--inference", "--steps", "1", "--python", py)
    assert p.returncode == 2 and "--inference and --steps" in p.stdout + p.stderr


def test_timm_and_torchvision_models_or_the_reason_they_cannot_run(models_python):
    """timm needs torchvision, and PyPI's torchvision is linked against CUDA torch: beside torch
    2.13.0+cpu `import torchvision` dies (operator torchvision::nms does not exist). The
    workaround: install torchvision from the CPU index that built this torch
    (pip install torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cpu)."""
    py = need_lib(models_python, "timm")  # skips, saying the chained cause, where it fails
    code = ("import timm, torch\nm = timm.create_model('resnet10t', pretrained=False)\n"
            "print(type(m).__name__)")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1000:]


def test_generate_decodes_with_the_cache_and_compares_tokens(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:gpt2", "--inference", "--generate", "4")
    g = r["generate"]
    assert g["status"] == "pass" and g["details"]["agreement"] == 1.0, g
    assert "4 greedy decode steps with the KV cache: every token agrees" in g["summary"]
    _doc, r = trial(py, f"{REAL}:gpt2_planted_bug", "--inference", "--generate", "4")
    g = r["generate"]
    assert g["status"] == "fail" and g["details"]["first_divergent_step"] == 0, g
    assert all(tok == 7 for row in g["details"]["device_tokens"] for tok in row)
    _doc, r = trial(py, f"{REAL}:bert_eval", "--generate", "2")
    assert r["generate"]["status"] == "skip" and "has none" in r["generate"]["summary"]
