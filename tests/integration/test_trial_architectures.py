"""`neuron-env trial` on thirteen real architectures built from tiny Hugging Face configs (no
download) on the emulated device: encoders (BERT, DeBERTa-v2), decoders with GQA, RoPE and a
sliding window (Llama, Mistral, Qwen2), mixture of experts (Mixtral), encoder-decoders with
generate (T5, BART), speech (Whisper), vision transformers (ViT, BEiT) and modern CNNs
(ConvNeXt, ResNet), across float32, bfloat16, autocast, --compile and --generate. Each runs ONE
trial process (several options at once: CI has two cores) and its verdict must equal the one
computed by hand with plain torch (tests/fixtures/trial/hand_verdict.py), so a failure is
trial's, not the model's; the emulated device runs every op on the CPU, so the true verdict is
a pass. The CNNs are the transformers ones: timm's need torchvision, which does not import
beside the CPU build of torch 2.13 from PyPI ("operator torchvision::nms does not exist")."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers.cli import REPO
from tests.helpers.models import need_lib
from tests.integration.test_trial_models import trial

pytestmark = pytest.mark.integration
ARCH = "tests/fixtures/trial/architectures.py"

CASES = [
    ("bert", ["--compile"]),
    ("deberta_v2", ["--compile"]),
    ("llama", ["--autocast"]),  # called with labels: judged on its own loss
    ("mistral", ["--compile"]),  # sliding window 8 < 16 tokens
    ("qwen2", ["--dtype", "bfloat16"]),
    ("mixtral", []),
    ("t5", ["--inference", "--generate", "3"]),
    ("bart", ["--autocast"]),
    ("whisper", ["--inference", "--generate", "3"]),
    ("vit", ["--dtype", "bfloat16", "--compile"]),
    ("beit", ["--autocast"]),
    ("convnext", ["--autocast", "--compile"]),
    ("resnet", ["--compile"]),
]


def by_hand(py: str, name: str, flags: list[str]) -> dict:
    r = subprocess.run([py, str(REPO / "tests/fixtures/trial/hand_verdict.py"),
                        f"{ARCH}:{name}", "neuron", *flags], capture_output=True, text=True,
                       timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name, flags", CASES, ids=[c[0] for c in CASES])
def test_the_verdict_is_the_true_one(models_python, name, flags):
    py = need_lib(models_python, "transformers")
    doc, r = trial(py, f"{ARCH}:{name}", *flags, timeout=600)
    hand = by_hand(py, name, flags)
    e = r["eager"]
    assert (e["status"] == "pass") == hand["eager_ok"], (e["summary"], hand)
    if "eager_error" in hand:  # a crash on the device, said as one
        assert e["details"]["crashed"] and "CRASHED" in e["summary"], e
    else:
        assert e["details"]["tensors"] == hand["tensors"], (e["details"]["tensors"], hand)
    if "--compile" in flags:
        c = r["compile"]
        assert (c["status"] in ("pass", "warn")) == hand["compile_ok"], (c["summary"], hand)
    if "--generate" in flags:
        g = r["generate"]
        assert (g["status"] == "pass") == hand["generate_ok"], (g["summary"], hand)
    # the emulated device runs every op on the CPU: the true verdict is a pass everywhere
    assert hand["eager_ok"] and hand.get("compile_ok", True) and hand.get("generate_ok", True), \
        hand
    assert doc["exit_code"] == 0, [(x["id"], x["summary"]) for x in doc["results"]
                                   if x["status"] in ("fail", "error")]
