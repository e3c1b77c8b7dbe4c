"""#48 items 4 and 5: `trial --world-size 2` on models whose layers couple the batch
(BatchNorm in train mode, CLIP's logits over every pair) says why DDP cannot equal one
process there (a warn with the evidence, not a rank blamed), says what an eval-mode comparison
did not cover, and FSDP2 keeps tied weights (GPT-2, T5) in one group."""

from __future__ import annotations

import pytest

from tests.integration.test_trial_distributed import trial

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MODELS = "tests/fixtures/trial/batch_coupled.py"


def test_batchnorm_in_train_mode_is_a_warn_naming_the_modules(hf_python):
    doc, r = trial(hf_python, f"{MODELS}:resnet_train", "--world-size", "2", "--steps", "1")
    d = r["trial.distributed"]
    assert d["status"] == "warn" and doc["exit_code"] == 0, d["summary"]
    assert "rank 0" not in d["summary"] and "depends on the rank" not in d["summary"]
    assert "BatchNorm" in d["summary"] and "SyncBatchNorm" in (d["fix"] or "")
    coupled = d["details"]["batch_coupled"]
    assert coupled["batchnorm"] == ["bn", "layer1.bn1", "layer1.bn2"]
    assert coupled["outputs"], coupled


def test_contrastive_outputs_are_named_as_depending_on_the_whole_batch(hf_python):
    doc, r = trial(hf_python, f"{MODELS}:clip", "--world-size", "2", "--steps", "1")
    d = r["trial.distributed"]
    assert d["status"] == "warn" and doc["exit_code"] == 0, d["summary"]
    outs = d["details"]["batch_coupled"]["outputs"]
    assert {"output[logits_per_image]", "output[logits_per_text]"} <= set(outs), outs
    assert "logits_per_image" in d["summary"]


def test_eval_mode_comparison_says_batchnorm_train_statistics_were_not_covered(hf_python):
    _doc, r = trial(hf_python, f"{MODELS}:resnet_dropout", "--world-size", "2", "--steps", "1")
    d = r["trial.distributed"]
    assert d["status"] == "pass" and d["details"]["mode"] == "eval", d["summary"]
    assert "running statistics" in d["summary"] and "layer1.bn1" in d["summary"]
    assert d["details"]["batch_coupled"]["batchnorm"] == ["bn", "layer1.bn1", "layer1.bn2"]


@pytest.mark.parametrize("model", ["gpt2_tied", "t5_tied"])
def test_fsdp2_keeps_tied_weights_in_one_group(hf_python, model):
    doc, r = trial(hf_python, f"{MODELS}:{model}", "--world-size", "2", "--strategy", "fsdp2",
                   "--steps", "1")
    d = r["trial.distributed"]
    assert doc["exit_code"] == 0 and d["status"] == "pass", d["summary"]
