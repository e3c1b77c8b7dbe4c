"""`neuron-env trial` end to end on a real torch 2.13.0 venv with the emulated backend (and on
its CPU): built-in workloads, user models, fallback, faults, shapes, baselines, bad MODELs."""

from __future__ import annotations

import json
import pickle
import subprocess
import time

import jsonschema
import pytest

from tests.helpers import procs
from tests.helpers.cli import REPO, cli_env, run_cli

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/trial.schema.json").read_text())
MODELS = "tests/fixtures/trial/user_models.py"


def trial(torch_python, *args, fault=None, timeout=300, **env):
    env = cli_env(NEURON_EMULATOR_FAULT=fault, **env)
    p = run_cli("trial", *args, "--python", torch_python, "--format", "json",
                "--iterations", "3", env=env, timeout=timeout)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == p.returncode, p.stderr
    return doc, {r["id"].split(".", 1)[1]: r for r in doc.get("results", [])}


def compile_backend_present(torch_python) -> bool:
    code = "import torch, torch._dynamo as d; print('neuron' in d.list_backends(exclude_tags=()))"
    return subprocess.run([torch_python, "-c", code], capture_output=True, text=True,
                          timeout=120).stdout.strip().endswith("True")


def test_builtin_mlp_on_the_emulated_device_with_steps(torch_python):
    doc, r = trial(torch_python, "builtin:mlp", "--steps", "2")
    assert doc["exit_code"] == 0 and doc["emulated"] is True
    assert list(r) == ["dtype", "reference", "eager", "steps", "fallback", "memory"]
    assert all(x["summary"].startswith("[EMULATED] ") for x in r.values())
    e = r["eager"]["details"]
    assert e["ok"] and e["tensors"] == 8 and e["mismatched_tensors"] == 0  # out, loss, 6 grads
    assert r["steps"]["details"]["tensors"] == 6 and r["steps"]["status"] == "pass"
    assert r["fallback"]["status"] == "pass" and "aten::addmm" in r["fallback"]["details"][
        "executed"]
    t = doc["target"]["timing"]["eager"]
    assert t["iterations"] == 3 and t["first_call_s"] > 0 and t["median_s"] > 0


@pytest.mark.slow
def test_other_builtins_in_text_and_markdown(torch_python):
    p = run_cli("trial", "builtin:transformer-block", "--python", torch_python,
                "--iterations", "2", "--autocast", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "float32 + autocast(bfloat16) on neuron judged against the CPU at the same dtype" \
        in p.stdout and "within 2x the CPU-autocast error" in p.stdout
    assert "trial builtin:transformer-block on neuron [EMULATED]" in p.stdout
    assert "Timing (synchronised fwd+bwd" in p.stdout and "(trial.eager)" in p.stdout
    steps = [ln.split("s] ", 1)[1] for ln in p.stderr.splitlines() if ln.startswith("[")]
    assert steps[:5] == ["trial: import", "trial: device", "trial: model", "trial: reference",
                         "trial: eager"], p.stderr  # said as each started (text format)
    p = run_cli("trial", "builtin:embedding", "--python", torch_python, "--device", "cpu",
                "--format", "markdown", "--iterations", "2", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("## neuron-env trial builtin:embedding on cpu")
    assert "trial:" not in p.stderr  # not text, no terminal: stderr stays quiet
    assert "| ✅ | `trial.eager` |" in p.stdout and "[EMULATED]" not in p.stdout


def test_user_models_from_a_file_and_a_module(torch_python):
    doc, r = trial(torch_python, f"{MODELS}:two_heads", "--dtype", "bfloat16")
    assert doc["exit_code"] == 0, r
    e = r["eager"]["details"]
    assert e["tensors"] == 9 and e["ok"]  # output[a], output[b], loss, 6 grads
    assert r["dtype"]["details"]["rtol"] is None  # the bf16 rule has no rtol (#48.6)
    assert "max|cpu_bfloat16 - cpu_float32|" in r["dtype"]["details"]["rule_applied"]
    doc, r = trial(torch_python, "tests.fixtures.trial.user_models:double", "--device", "cpu")
    assert r["dtype"]["status"] == "warn" and "float64" in r["dtype"]["summary"]
    assert r["dtype"]["details"]["float64_parameters"] == ["weight", "bias"]


@pytest.mark.slow
def test_op_outside_the_native_set_falls_back_and_fails_to_compile(torch_python):
    doc, r = trial(torch_python, f"{MODELS}:cumulative", "--compile")
    f = r["fallback"]
    assert f["status"] == "warn" and "aten::cumprod" in f["details"]["ops"]  # + its backward's
    assert f["details"]["counts"]["aten::cumprod"] >= 1 and "aten::cumprod x" in f["summary"]
    assert r["eager"]["status"] == "pass"  # the fallback computes the right thing
    c = r["compile"]
    if compile_backend_present(torch_python):
        assert c["status"] == "fail" and "aten::cumprod" in c["summary"], c
        assert "aten::cumprod" in c["fix"] and doc["exit_code"] == 1
        doc, r = trial(torch_python, f"{MODELS}:cumulative", "--compile",
                       TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION="0")
        c = r["compile"]
        assert c["status"] == "warn" and "aten::cumprod" in c["details"]["fallback_ops"], c
    else:  # the emulator on this branch has no compile backend yet: a clear skip
        assert c["status"] == "skip" and "no torch.compile backend 'neuron'" in c["summary"]
    doc, r = trial(torch_python, f"{MODELS}:cumulative", "--no-fallback")
    assert r["fallback"]["status"] == "fail" and doc["exit_code"] == 1


def test_perturbed_device_fails_the_comparison_naming_the_worst_tensor(torch_python):
    doc, r = trial(torch_python, "builtin:mlp", fault="perturb")
    e = r["eager"]
    assert doc["exit_code"] == 1 and e["status"] == "fail" and "MISMATCH" in e["summary"]
    worst = e["details"]["worst"]
    assert worst == "output" and e["observed"]["worst"] == worst  # the output, not a gradient
    assert f"largest output difference {worst} (" in e["summary"], e["summary"]
    assert e["details"]["mismatched_tensors"] >= 1 and e["fix"]
    # the first Linear of the Sequential already leaves tolerance: named, with its error
    div = e["details"]["first_divergence"]
    assert div["module"] == "0" and div["module_type"] == "Linear" and div["order"] == 0
    assert "first module out of tolerance: 0 (Linear, " in e["summary"]


@pytest.mark.slow
def test_shape_sweep_recompiles_per_shape_with_advice(torch_python):
    doc, r = trial(torch_python, "builtin:mlp", "--device", "cpu", "--batch-sizes", "8,32,48")
    s = r["shapes"]
    rows = s["details"]["rows"]
    assert [row["shape"] for row in rows] == [[8, 64], [32, 64], [48, 64]]
    assert [row["compilations"] for row in rows] == [1, 0, 1]  # 32x64 is the example's shape
    adv = s["details"]["advice"]
    assert adv["compilations"] == 2 and adv["buckets"] == [[8, 64], [32, 64], [64, 64]]
    assert s["status"] == "warn" and "compilation(s)" in s["summary"] and "pad" in s["summary"]
    assert r["compile"]["status"] == "pass" and r["compile"]["details"]["backend"] == "aot_eager"
    assert set(doc["target"]["timing"]) == {"eager", "compiled"}
    if compile_backend_present(torch_python):
        doc, r = trial(torch_python, "builtin:mlp", "--shapes", "8x64,16x64")
        assert [row["compilations"] for row in r["shapes"]["details"]["rows"]] == [1, 1]


@pytest.mark.slow
def test_baseline_saved_on_cpu_compared_on_the_emulator(torch_python, tmp_path):
    base = tmp_path / "mlp-cpu.pt"
    doc, r = trial(torch_python, "builtin:mlp", "--device", "cpu", "--steps", "1",
                   "--save-baseline", str(base))
    assert r["baseline"]["status"] == "pass" and base.is_file()
    assert r["baseline"]["details"]["saved"]["device"] == "cpu"
    read = ("import sys, torch; print(torch.load(sys.argv[1], map_location='cpu', "
            "weights_only=True)['meta'])")
    meta = json.loads(subprocess.run([torch_python, "-c", read, str(base)], capture_output=True,
                                     text=True, timeout=120, check=True).stdout)
    jsonschema.validate(meta, json.loads(
        (REPO / "neuron_env/schemas/trial-baseline.schema.json").read_text()),
        format_checker=jsonschema.FormatChecker())
    assert meta["model"] == "builtin:mlp" and meta["steps"] == 1
    doc, r = trial(torch_python, "builtin:mlp", "--steps", "1", "--baseline", str(base))
    b = r["baseline"]
    assert doc["exit_code"] == 0 and b["status"] == "pass" and b["details"]["tensors"] == 14
    assert b["details"]["baseline"]["torch"].startswith("2.13.0")
    doc, r = trial(torch_python, "builtin:mlp", "--steps", "1", "--baseline", str(base),
                   fault="perturb")
    assert r["baseline"]["status"] == "fail" and r["baseline"]["details"]["worst"]
    doc, r = trial(torch_python, "builtin:conv", "--baseline", str(base))
    assert doc["exit_code"] == 2 and "recorded with model=builtin:mlp" in doc["error"]["message"]


def test_a_pickle_posing_as_a_baseline_is_refused_unexecuted(torch_python, tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    bad = tmp_path / "evil.pt"
    bad.write_bytes(pickle.dumps({"meta": "{}", "tensors": Evil()}))
    doc, _ = trial(torch_python, "builtin:mlp", "--baseline", str(bad))
    assert doc["exit_code"] == 2 and "not a neuron-env trial baseline" in doc["error"]["message"]
    assert not marker.exists()


def test_hang_times_out_with_exit_4_naming_the_step(torch_python):
    t0 = time.monotonic()
    tok = procs.token("trial-hang")  # names this run's processes, not another worker's
    doc, r = trial(torch_python, "builtin:mlp", "--timeout", "20", fault="hang",
                   **{procs.VAR: tok})
    assert time.monotonic() - t0 < 60
    (res,) = r.values()
    assert doc["exit_code"] == 4 and res["timed_out"] is True
    assert res["id"] == "trial.eager" and "during the eager step" in res["summary"]
    assert procs.with_token(tok) == [], "the trial process group survived its timeout"


@pytest.mark.parametrize("model, says", [
    ("tests/fixtures/trial/broken_import.py:make",
     "raised ModuleNotFoundError: No module named 'definitely_not_an_installed_module'"),
    ("tests/fixtures/trial/chained_import.py:make",
     "raised RuntimeError: Failed to import transformers.models.auto because of the error "
     "above (at "),
    ("tests/fixtures/trial/chained_import.py:make", "; caused by ModuleNotFoundError: No module "
     "named 'definitely_not_an_installed_vision_package'"),
    (f"{MODELS}:garbage", "returned a value of type int: MODEL must name a callable"),
    (f"{MODELS}:wrong_inputs", "returned example_inputs of type str"),
    (f"{MODELS}:raises", "calling it raised ValueError: the dataset is not mounted"),
    (f"{MODELS}:nope", "has no callable named 'nope'"),
    ("no_such_module_anywhere:make", "No module named 'no_such_module_anywhere'"),
])
def test_bad_models_exit_2_with_the_protocol(torch_python, model, says):
    doc, _ = trial(torch_python, model)
    assert doc["exit_code"] == 2 and says in doc["error"]["message"], doc["error"]


def test_bad_flags_exit_2_before_starting_the_target(torch_python):
    for args in (["builtin:mlp", "--device", "tpu"], ["builtin:mlp", "--shapes", "8xA"],
                 ["nocolon"], ["missing.py:make"], ["builtin:resnet9000"],
                 ["builtin:mlp", "--baseline", "/nope.pt"],
                 ["builtin:mlp", "--shapes", "8x1", "--batch-sizes", "8"]):
        p = run_cli("trial", *args, "--python", torch_python)
        assert p.returncode == 2 and "Traceback" not in p.stderr, (args, p.stderr)
    p = run_cli("trial", "builtin:mlp", "--python", "/nope/python", "--format", "json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "interpreter"
