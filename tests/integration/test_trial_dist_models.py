"""`trial MODEL --world-size N` takes what the one-process trial takes, decides as it does, and
says what happened (issue #40: 3, 4, 11, 12 and parity; #36: 5, 6, 12), on a real torch venv:
tiny Hugging Face BERTs built from a config (keyword inputs, train-mode dropout, an unused
pooler), processes killed from outside, a planted `json.py` in the caller's directory, a
planted pickle in a run directory, and a parent killed by SIGKILL."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import procs
from tests.helpers.cli import REPO, cli_env
from tests.integration.test_shadow_files import NEURON_ENV, Plants
from tests.integration.test_trial_distributed import SCHEMA, printed_torchrun, trial

pytestmark = pytest.mark.integration
MODELS = "tests/fixtures/trial/dist_models.py"
UNUSED = ["pooler.dense.bias", "pooler.dense.weight"]


def _dist(doc_results: dict) -> dict:
    return doc_results["trial.distributed"]


# -- #40.3 / #40.4 / parity: one input and compare path ------------------------------------------
def test_keyword_inputs_of_a_hugging_face_model_are_taken(hf_python):
    """#40.3: a dict of keyword inputs (what a tokenizer gives) is sharded key by key."""
    doc, r = trial(hf_python, f"{MODELS}:bert_eval", "--world-size", "2")
    d = _dist(r)
    assert doc["exit_code"] == 0 and d["status"] == "pass", d["summary"]
    assert d["details"]["mode"] == "eval" and d["details"]["tensors"] == 39
    assert [x["shard"] for x in d["details"]["ranks"]] == [[0, 2], [2, 4]]


@pytest.mark.parametrize("model", [
    *(f"real_models.py:{m}" for m in ("vit", "llama_labels", "mistral", "gpt2")),
    *(f"architectures.py:{m}" for m in ("t5", "deberta_v2", "mixtral", "convnext"))])
def test_more_architectures_give_the_one_process_verdict_in_two(hf_python, model):
    """#40: every architecture tried gives a true verdict in one process and in two: beyond
    BERT, a vision transformer, a decoder with GQA/RoPE called with `labels` (its own
    `out.loss`), one with a sliding window, GPT-2, an encoder-decoder (T5), DeBERTa-v2, an MoE
    (Mixtral) and a modern CNN (ConvNeXt): two ranks match the one-process run on the whole
    batch, and the one-process trial passes the same model."""
    real = f"tests/fixtures/trial/{model}"
    one_doc, one = trial(hf_python, real)
    assert one_doc["exit_code"] == 0 and one["trial.eager"]["status"] == "pass", one["trial.eager"]
    doc, r = trial(hf_python, real, "--world-size", "2")
    d = _dist(r)
    assert doc["exit_code"] == 0 and d["status"] == "pass", d["summary"]
    assert "match one process on the whole batch" in d["summary"]


def test_train_mode_dropout_is_compared_in_eval_mode_as_one_process_does(hf_python):
    """#40.4: the same rule as one process (its own function decides): dropout in train mode
    draws other masks for the whole batch and for a shard, so both run in eval mode."""
    _doc, one = trial(hf_python, f"{MODELS}:bert_train")
    one_mode = one["trial.dtype"]["details"]
    doc, r = trial(hf_python, f"{MODELS}:bert_train", "--world-size", "2", "--steps", "2")
    d = _dist(r)
    assert doc["exit_code"] == 0 and d["status"] == "pass", d["summary"]
    assert d["details"]["mode"] == one_mode["mode"] == "eval"
    assert d["details"]["stochastic"] == one_mode["stochastic"]
    assert "embeddings.dropout" in d["details"]["stochastic"]
    assert "compared in EVAL mode" in d["summary"]


@pytest.mark.parametrize("device", ["neuron", "cpu"])
def test_the_stock_bert_with_an_unused_pooler_runs_under_ddp(hf_python, device):
    """#40.12: a loss on last_hidden_state leaves the pooler without a gradient; DDP used to
    wait for it until --timeout."""
    doc, r = trial(hf_python, f"{MODELS}:bert_last_hidden", "--world-size", "2", "--device",
                   device, "--timeout", "90")
    d = _dist(r)
    assert doc["exit_code"] == 0 and d["status"] == "pass", d["summary"]
    assert d["details"]["unused_parameters"] == UNUSED
    assert "2 parameter(s) get no gradient from the loss" in d["summary"]
    assert "find_unused_parameters=True" in d["summary"]


def test_one_and_two_ranks_and_one_process_agree_on_verdict_and_loss(hf_python):
    """Parity: an HF model in eval mode gives the same verdict and the same loss at
    --world-size 1 and 2, and the same loss as the one-process trial's reference."""
    losses = []
    for n in ("1", "2"):
        doc, r = trial(hf_python, f"{MODELS}:bert_eval", "--world-size", n, "--steps", "2")
        d = _dist(r)
        assert doc["exit_code"] == 0 and d["status"] == "pass", (n, d["summary"])
        loss = d["details"]["loss"]
        assert loss["ranks"] == pytest.approx(loss["reference"], rel=1e-4)
        losses.append(loss["reference"])
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    _doc, one = trial(hf_python, f"{MODELS}:bert_eval")
    assert one["trial.eager"]["status"] == "pass"
    assert one["trial.reference"]["details"]["loss"] == pytest.approx(losses[0][0], rel=1e-4)


# -- #40.11: death and time-out wording ------------------------------------------------------------
def _start(py: str, tmp: Path, *args: str, **env: str) -> subprocess.Popen:
    """The CLI (`python -m neuron_env`, whose death a test may cause), its run directories in
    tmp (TMPDIR)."""
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "neuron_env", "trial", *args, "--python", py,
                             "--format", "json", "--iterations", "2"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(TMPDIR=str(tmp), **env))


def _wait_for(tmp: Path, name: str, step: str, p: subprocess.Popen) -> tuple[Path, int]:
    """(the run directory, the pid) once process `name` announced `step` in its file."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for steps in tmp.glob(f"neuron-env-trial-dist-*/{name}.steps"):
            pid = steps.with_suffix(".pid")
            if step in steps.read_text() and pid.is_file() and pid.read_text().strip():
                return steps.parent, int(pid.read_text())
        assert p.poll() is None, p.communicate()
        time.sleep(0.1)
    p.kill()
    raise AssertionError(f"{name} never reached {step}")


def _report(p: subprocess.Popen) -> tuple[dict, dict]:
    out, err = p.communicate(timeout=300)
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == p.returncode, err
    return doc, {r["id"]: r for r in doc["results"]}


def test_a_reference_killed_by_sigkill_is_said_killed(torch_python, tmp_path):
    tok = procs.token("trial-dist-kill-ref")
    p = _start(torch_python, tmp_path / "tmp", "builtin:mlp", "--world-size", "2", "--device",
               "cpu", "--timeout", "120", NEURON_ENV_TRIAL_DIST_FAULT="hang:reference",
               **{procs.VAR: tok})
    _run_dir, pid = _wait_for(tmp_path / "tmp", "reference", "reference step 1", p)
    os.kill(pid, signal.SIGKILL)
    doc, r = _report(p)
    d = _dist(r)
    assert doc["exit_code"] == 1 and not d.get("timed_out"), d
    assert ("the one-process reference (the whole batch, no process group) died during "
            "reference step 1: it was killed by signal 9 (SIGKILL)") in d["summary"], d["summary"]
    assert "@@" not in d["summary"] and "no rank was started" in d["summary"]
    assert "out-of-memory killer" in d["fix"]
    assert procs.with_token(tok) == []


@pytest.mark.parametrize("nnodes", ["1", "2"])
def test_a_rank_killed_early_is_a_kill_not_a_time_out(torch_python, tmp_path, nnodes):
    tok = procs.token("trial-dist-kill-rank")
    p = _start(torch_python, tmp_path / "tmp", "builtin:mlp", "--world-size", "2", "--nnodes",
               nnodes, "--device", "cpu", "--timeout", "120",
               NEURON_ENV_TRIAL_DIST_FAULT="hang:1", **{procs.VAR: tok})
    _run_dir, pid = _wait_for(tmp_path / "tmp", "rank1", "model", p)
    os.kill(pid, signal.SIGKILL)
    doc, r = _report(p)
    d = _dist(r)
    assert doc["exit_code"] == 1 and not d.get("timed_out"), d["summary"]
    assert "rank 1 died during model: it was killed by signal 9 (SIGKILL)" in d["summary"], d[
        "summary"]
    assert "timed out" not in d["summary"] and "out-of-memory killer" in d["fix"]
    assert "did not finish" in r["trial.cost"]["summary"]
    assert procs.with_token(tok) == []


# -- #36.5: no module from the caller's directory in any child, torchrun agents included ---------
def test_no_child_imports_a_module_from_the_callers_directory(torch_python, tmp_path):
    if not NEURON_ENV.is_file():
        pytest.skip(f"no entry-point script {NEURON_ENV} (install the project with pip -e)")
    plants = Plants(tmp_path)
    (plants.cwd / "planted_model.py").write_text(
        "import torch\n\ndef build():\n    return torch.nn.Linear(8, 4), (torch.randn(4, 8),)\n")
    for extra in (["--nnodes", "2"], []):
        p = plants.run("trial", "planted_model:build", "--world-size", "2", *extra, "--device",
                       "cpu", "--iterations", "2", "--python", torch_python, "--format", "json",
                       path=False)
        doc = json.loads(p.stdout)
        res = {r["id"]: r for r in doc["results"]}
        assert res["trial.distributed"]["status"] == "pass", (extra, p.stdout[-2000:], p.stderr)
        assert plants.imported() == [], extra


# -- #36.6: tensors as data only ---------------------------------------------------------------
class _Planted:
    def __init__(self, mark: str) -> None:
        self.mark = mark

    def __reduce__(self):
        return (os.system, (f"touch {self.mark}",))


def test_a_pickle_planted_in_the_run_directory_never_runs(torch_python, tmp_path):
    """The ranks of a printed launch read reference.pt from RUN_DIR (shared storage another
    user may write): as data (weights_only=True), never as a pickle that runs code."""
    mark = tmp_path / "pwned"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "reference.pt").write_bytes(pickle.dumps(_Planted(str(mark))))
    script = printed_torchrun(torch_python, "--world-size", "1")
    script = script[:script.index("# 1.")] + script[script.index("# 2."):]  # no reference run
    tok = procs.token("trial-dist-pickle")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300,
                          env=cli_env(RUN_DIR=str(run_dir), HEAD_ADDR="127.0.0.1",
                                      **{procs.VAR: tok}))
    assert done.returncode != 0
    assert not mark.exists(), "the planted pickle ran"
    error = (run_dir / "rank0.error").read_text()
    assert "weights_only" in error and "not a reference saved by `neuron-env trial`" in error
    assert procs.with_token(tok) == []


# -- #36.12: a parent killed by SIGKILL ------------------------------------------------------------
def test_a_killed_parent_takes_its_workers_and_the_next_run_removes_its_directory(
        torch_python, tmp_path):
    tmp = tmp_path / "tmp"
    tok = procs.token("trial-dist-parent")
    p = _start(torch_python, tmp, "builtin:mlp", "--world-size", "2", "--nnodes", "2",
               "--device", "cpu", "--timeout", "200", NEURON_ENV_TRIAL_DIST_FAULT="hang:1",
               **{procs.VAR: tok})
    run_dir, _pid = _wait_for(tmp, "rank0", "wrap ddp", p)
    assert (run_dir.stat().st_mode & 0o777) == 0o700 and run_dir.stat().st_uid == os.getuid()
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    deadline = time.monotonic() + 60
    while procs.with_token(tok) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert procs.with_token(tok) == [], "workers outlived their parent"
    assert run_dir.is_dir()  # a SIGKILLed neuron-env removes nothing ...
    _doc, r = trial(torch_python, "builtin:mlp", "--world-size", "2", "--device", "cpu",
                    TMPDIR=str(tmp))
    d = _dist(r)
    assert d["status"] == "pass" and not run_dir.exists()  # ... the next run does, and says so
    assert d["details"]["stale_run_dirs"] == [{"path": str(run_dir), "pid": p.pid,
                                               "removed": True}]
    assert "removed 1 run directory left by a dead trial" in d["summary"]
    assert list(tmp.glob("neuron-env-trial-dist-*")) == []
