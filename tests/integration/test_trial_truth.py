"""`neuron-env trial` tells the truth on real models (tiny Hugging Face configs built in code,
no download) on the emulated device: the model's own loss, the loss_fn forms, a module that
runs on the device path only, randomness decided by running, the tolerance arithmetic, the
fallbacks of every phase, checked fix lines, root causes and the one-process cost."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.models import need_lib
from tests.integration.test_trial_models import trial

pytestmark = pytest.mark.integration
REAL = "tests/fixtures/trial/real_models.py"
USER = "tests/fixtures/trial/user_models.py"


def in_target(py, code: str) -> dict:
    """Plain torch in the target interpreter: the hand-made check a verdict must agree with."""
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


LOAD = ("import json, sys, torch\nsys.path.insert(0, 'tests/fixtures/trial')\n"
        "import real_models as r\ntorch.manual_seed(0)\n")


def test_a_model_called_with_labels_is_judged_on_its_own_loss(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:llama_labels")
    hand = in_target(py, LOAD + "m, i = r.llama_labels()\nout = m(**i)\n"
                     "print(json.dumps({'own': float(out.loss), "
                     "'squares': float(out.logits.square().mean())}))")
    loss = r["reference"]["details"]["loss"]
    assert abs(loss - hand["own"]) < 1e-4 * hand["own"], (loss, hand)
    assert r["eager"]["status"] == "pass"


def test_a_loss_fn_of_the_wrong_signature_is_bad_input_and_the_slice_form_runs(models_python):
    py = need_lib(models_python, "transformers")
    p = trial(py, f"{REAL}:bert_loss_three_args", fmt="text")
    out = p.stdout + p.stderr
    assert p.returncode == 2, out
    assert "loss_fn(out, batch, extra) that takes 3 required arguments" in out
    assert "loss_fn(output) -> scalar tensor, or loss_fn(output, batch_slice)" in out
    assert "fails on the CPU" not in out
    # the distributed form (output, batch_slice) runs in one process, the slice the whole batch
    _doc, r = trial(py, f"{REAL}:bert_loss_batch_slice")
    hand = in_target(py, LOAD + "m, i, f = r.bert_loss_batch_slice()\n"
                     "print(json.dumps({'loss': float(f(m(**i), slice(0, 2)))}))")
    assert abs(r["reference"]["details"]["loss"] - hand["loss"]) < 1e-5, r["reference"]
    assert r["eager"]["status"] == "pass"


def test_a_module_on_the_device_path_only_is_named_as_the_first_divergence(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:bert_device_only_module")
    e = r["eager"]
    div = e["details"]["first_divergence"]
    assert e["status"] == "fail"
    assert div["module"] == "encoder.layer.1.intermediate.intermediate_act_fn.correction", div
    assert div["side"] == "device" and div["module_type"] == "Shift"
    assert abs(div["max_abs_change"] - 0.05) < 1e-6
    assert "runs on the device path only" in e["summary"] and \
        "start at module encoder.layer.1.intermediate.intermediate_act_fn.correction" in e["fix"]


def test_randomness_is_decided_by_running_not_by_attribute_names(models_python):
    py = need_lib(models_python, "transformers")
    # Whisper from a config: train mode, mask_time_prob 0.05, apply_spec_augment False and
    # every dropout 0: nothing random runs, so it is compared as it is, in train mode
    hand = in_target(py, LOAD + "m, i = r.whisper()\nouts = []\n"
                     "for s in (1, 2):\n    torch.manual_seed(s)\n"
                     "    outs.append(m(**i).last_hidden_state)\n"
                     "print(json.dumps({'train': m.training, 'same': bool(torch.equal(*outs)),"
                     " 'mask_time_prob': m.config.mask_time_prob}))")
    assert hand == {"train": True, "same": True, "mask_time_prob": 0.05}
    _doc, r = trial(py, f"{REAL}:whisper")
    d = r["dtype"]["details"]
    assert d["mode"] == "train" and d["stochastic"] == [], d
    assert "EVAL" not in r["dtype"]["summary"] and r["eager"]["status"] == "pass"


def test_reported_errors_are_the_hand_computed_ones_and_atol_is_absolute(torch_python):
    py = torch_python
    hand = in_target(py, "import json, torch\nx = torch.tensor([[0.5, 1.0, -2.0, 4.0]])\n"
                     "d = ((x * 1.0 + 5e-3) - x).abs()\n"
                     "print(json.dumps({'abs': float(d.max()), 'rel': float((d / x.abs()).max())"
                     "}))")
    assert abs(hand["rel"] - 1e-2) < 1e-5
    _doc, r = trial(py, f"{USER}:offset", "--inference", "--rtol", "0", "--atol", "1e-3")
    e = r["eager"]["details"]
    assert r["eager"]["status"] == "fail" and e["worst"] == "output"
    w = e["worst_detail"]
    assert w["mismatched"] == 4 and w["elements"] == 4
    assert abs(e["max_abs_error"] - hand["abs"]) < 1e-9 and abs(e["max_rel_error"] - hand["rel"]) \
        < 1e-9, (e, hand)  # with --rtol 0 the relative error is still reported
    # atol is absolute, in the tensor's units: 4e-3 < 5e-3 fails, 6e-3 passes (were it scaled
    # by the largest reference value, 4.0, both would pass)
    _doc, r = trial(py, f"{USER}:offset", "--inference", "--rtol", "0", "--atol", "4e-3")
    assert r["eager"]["status"] == "fail"
    _doc, r = trial(py, f"{USER}:offset", "--inference", "--rtol", "0", "--atol", "6e-3")
    assert r["eager"]["status"] == "pass"
    assert abs(r["eager"]["details"]["max_rel_error"] - hand["rel"]) < 1e-9
    p = run_cli("trial", "--help", env=cli_env(COLUMNS="200"))
    assert "in the tensor's units" in p.stdout and "relative to each" not in p.stdout


def test_a_compile_failure_checks_its_claim_on_the_cpu_and_names_the_root_cause(models_python):
    py = need_lib(models_python, "transformers")
    # BERT whose device path calls an op torch.compile cannot trace: the CPU copy compiles
    _doc, r = trial(py, f"{REAL}:bert_compile_fails_on_device", "--compile", "--inference")
    c = r["compile"]
    assert c["status"] == "fail" and c["details"]["cpu_aot_eager"]["ok"] is True, c
    assert "no fake impl registered for <CustomOpDef(trial_tests::device_only_opaque)>" in \
        c["details"]["root_cause"]
    assert "real_models.py:" in c["details"]["user_frame"]
    assert "compiles and runs this model on the CPU" in c["fix"]
    assert "any backend fails the same" not in c["fix"] + c["summary"]
    # a shape that does not fit the model (64 positions) says which shape and why
    _doc, r = trial(py, f"{REAL}:bert_eval", "--compile", "--inference", "--shapes",
                    "2x16,2x100")
    s = r["shapes"]
    bad = [row for row in s["details"]["rows"] if row.get("error")]
    assert [row["shape"] for row in bad] == [[2, 100]], s
    assert "expand: attempting to expand a dimension of length 64 -> 100" in bad[0]["error"]
    assert "modeling_bert.py:" in bad[0]["error"]
    assert "when making fake tensor call" not in s["summary"]
    assert s["fix"].startswith("shape 2x100 does not run on this model")


def test_a_compile_failure_of_the_models_own_code_says_the_cpu_fails_too(torch_python):
    _doc, r = trial(torch_python, f"{USER}:untraceable", "--compile")
    c = r["compile"]
    assert c["status"] == "fail" and c["details"]["cpu_aot_eager"]["ok"] is False, c
    assert "no fake impl registered" in c["details"]["cpu_aot_eager"]["error"]
    assert c["fix"].startswith("torch.compile fails on the CPU too (backend='aot_eager'")


def test_fallbacks_of_every_phase_are_listed_by_phase(models_python, torch_python):
    py = need_lib(models_python, "transformers")
    # an op without a device kernel (cumprod) in the decode steps only: the forward itself runs
    # without a fallback, generate() does not
    _doc, r = trial(py, f"{REAL}:gpt2_padded", "--inference", "--generate", "3")
    f = r["fallback"]
    phases = f["details"]["phases"]
    assert phases["forward"]["ops"] == [] and "aten::cumprod" in phases["generate"]["ops"], f
    assert f["status"] == "warn" and "aten::cumprod" in f["details"]["ops"]
    assert re.search(r"aten::cumprod x\d+ \[generate\]", f["summary"]), f["summary"]
    assert "phases tracked: forward, generate" in f["summary"]
    # forward, backward, steps and compile of a model with cumsum (compile fails on neuron)
    _doc, r = trial(torch_python, f"{USER}:cumulative", "--steps", "1", "--compile")
    phases = r["fallback"]["details"]["phases"]
    assert {"forward", "backward", "steps", "compile"} <= set(phases), phases
    assert "aten::cumprod" in phases["forward"]["ops"] and "aten::cumprod" in phases["steps"]["ops"]


def test_a_generate_crash_names_its_root_cause_not_the_tokens(models_python):
    py = need_lib(models_python, "transformers")
    _doc, r = trial(py, f"{REAL}:gpt2_decode_crash", "--inference", "--generate", "3")
    g = r["generate"]
    assert r["eager"]["status"] == "pass" and g["status"] == "fail", g
    assert g["details"]["root_cause"] == "RuntimeError: planted: this kernel has no single-token "\
        "path" and "real_models.py:" in g["details"]["user_frame"]
    assert "crashed on the device, not in the tokens it picked" in g["fix"]
    assert "planted: this kernel has no single-token path" in g["fix"]
    assert "picks other tokens" not in g["fix"]


def test_one_process_cost_is_the_steady_state_priced(torch_python):
    doc, r = trial(torch_python, "builtin:mlp", "--price-per-hour", "21.5", "--compile")
    c = r["cost"]
    assert c["status"] == "pass" and c["details"]["processes"] == 1, c
    thr, this = c["details"]["throughput"], c["details"]["this"]
    timing = doc["target"]["timing"]
    # by hand: the faster matching mode's median step, builtin:mlp's batch of 32
    mode = min(("eager", "compiled"), key=lambda m: timing[m]["median_s"])
    assert thr["mode"] == mode and thr["batch"] == 32
    sps = 32 / timing[mode]["median_s"]
    assert abs(this["samples_per_s"] - sps) < 1e-9 * sps
    assert abs(this["usd_per_1000_samples"] - 21.5 / (sps * 3600) * 1000) < 1e-12
    assert "per 1,000 samples" in c["summary"] and "REHEARSAL" in c["summary"]
    p = trial(torch_python, "builtin:mlp", "--price-per-hour", "21.5", fmt="text")
    assert "Cost (REHEARSAL" in p.stdout and "neuron x1, eager, batch 32" in p.stdout
