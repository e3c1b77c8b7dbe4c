"""`neuron-env smoke` end to end on a real torch 2.13.0 venv with the emulated backend."""

from __future__ import annotations

import json
import sys
import time

import jsonschema
import pytest

from tests.helpers import procs, roots, terminal
from tests.helpers.cli import REPO, cli_env, run_cli

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/smoke.schema.json").read_text())


def smoke_json(torch_python, *args, fault=None, timeout=240, **extra):
    env = cli_env(NEURON_EMULATOR_FAULT=fault, **extra)
    p = run_cli("smoke", "--python", torch_python, "--format", "json", *args, env=env,
                timeout=timeout)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == p.returncode, p.stderr
    return doc, {r["id"]: r for r in doc["results"]}


def test_smoke_on_the_emulated_device(torch_python):
    doc, r = smoke_json(torch_python, "--size", "128", "--iterations", "5", "--backward")
    assert doc["exit_code"] == 0 and doc["emulated"] is True
    assert list(r) == ["smoke.import", "smoke.device", "smoke.matmul", "smoke.backward",
                       "smoke.fallback"]
    assert all(x["summary"].startswith("[EMULATED] ") for x in r.values())
    m = r["smoke.matmul"]["details"]
    assert m["size"] == 128 and m["iterations"] == 5 and m["mismatched"] == 0
    assert m["first_call_s"] > 0 and m["median_s"] > 0 and m["tflops"] > 0
    assert m["rtol"] == 1e-4 and m["atol"] == 1e-4
    assert doc["target"]["backend"]["emulated"] is True
    text = run_cli("smoke", "--python", torch_python, "--size", "64").stdout
    assert "EMULATED device, not Trainium" in text


def test_smoke_cpu_is_not_labelled_emulated_and_compile_runs(torch_python):
    doc, r = smoke_json(torch_python, "--device", "cpu", "--size", "64", "--compile",
                        "--dtype", "bfloat16", "--rtol", "0.05")
    assert doc["emulated"] is False and not r["smoke.matmul"]["summary"].startswith("[EMU")
    assert r["smoke.matmul"]["details"]["rtol"] == 0.05
    assert r["smoke.compile"]["status"] == "pass"
    assert r["smoke.compile"]["details"]["backend"] == "aot_eager"
    assert r["smoke.fallback"]["status"] == "skip"


def test_perturbed_matmul_fails_with_error_figures(torch_python):
    doc, r = smoke_json(torch_python, "--size", "128", fault="perturb")
    m = r["smoke.matmul"]
    assert doc["exit_code"] == 1 and m["status"] == "fail" and "MISMATCH" in m["summary"]
    assert m["details"]["mismatched"] > 0 and m["observed"]["max_abs_error"] > 1e-3


def test_hanging_device_times_out_with_exit_4_and_no_orphan(torch_python):
    t0 = time.monotonic()
    tok = procs.token("smoke-hang")  # names this run's processes, not another worker's
    doc, r = smoke_json(torch_python, "--size", "64", "--timeout", "10", fault="hang",
                        **{procs.VAR: tok})
    assert time.monotonic() - t0 < 30
    assert doc["exit_code"] == 4
    res = r["smoke.matmul"]
    assert res["timed_out"] is True and "during the matmul step" in res["summary"]
    assert procs.with_token(tok) == [], "the smoke process group survived its timeout"


def test_noisy_backend_crash_and_missing_torch(torch_python, venv_factory):
    doc, r = smoke_json(torch_python, "--size", "64", fault="noisy")
    assert doc["exit_code"] == 0  # stdout noise does not confuse the result
    doc, r = smoke_json(torch_python, "--size", "64", fault="crash")
    only = next(iter(r.values()))
    assert doc["exit_code"] == 1 and "crashed (signal 11)" in only["summary"]
    py, _ = venv_factory()
    doc, r = smoke_json(str(py))
    assert r["smoke.import"]["status"] == "fail" and "No module named 'torch'" in \
        r["smoke.import"]["summary"]


def test_out_of_memory_and_fallback_reporting(torch_python):
    doc, r = smoke_json(torch_python, "--size", "400000")
    assert r["smoke.matmul"]["status"] == "fail" and "out of memory" in \
        r["smoke.matmul"]["summary"]
    doc, r = smoke_json(torch_python, "--size", "32", fault="fallback")
    f = r["smoke.fallback"]
    assert f["status"] == "warn" and "aten::mm" in f["details"]["ops"] and doc["exit_code"] == 0
    assert any("NeuronFallbackWarning" in w["warning"] for w in doc["target"]["warnings"])
    doc, r = smoke_json(torch_python, "--size", "32", "--no-fallback", fault="fallback")
    assert r["smoke.fallback"]["status"] == "fail" and doc["exit_code"] == 1


def test_bad_smoke_flags_exit_2(torch_python):
    for args in (["--device", "tpu"], ["--dtype", "float64"], ["--size", "0"]):
        p = run_cli("smoke", "--python", torch_python, *args)
        assert p.returncode == 2 and "Traceback" not in p.stderr
    p = run_cli("smoke", "--python", "/nope/python", "--format", "json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "interpreter"


def test_doctor_smoke_adds_smoke_device(tmp_path, torch_python):
    root = roots.trn2_host(tmp_path / "r")
    p = run_cli("doctor", "--root", str(root), "--python", torch_python, "--smoke",
                "--only", "smoke", "--format", "json", timeout=240)
    doc = json.loads(p.stdout)
    (res,) = doc["results"]
    assert res["id"] == "smoke.device" and res["status"] == "pass", res
    assert res["details"]["emulated"] is True and res["summary"].startswith("[EMULATED]")
    assert p.stderr == ""  # piped JSON: no step lines
    text = run_cli("doctor", "--root", str(root), "--python", torch_python, "--smoke",
                   "--only", "smoke", timeout=240)
    assert text.returncode == 0, text.stdout + text.stderr
    said = [ln.split("] ", 1)[1] for ln in text.stderr.splitlines() if "doctor --smoke:" in ln]
    assert said == [f"doctor --smoke: {s}" for s in ("import", "device", "matmul", "fallback")]
    p = run_cli("doctor", "--root", str(root), "--python", torch_python, "--smoke",
                "--only", "smoke", "--instance-type", "trn2.48xlarge", "--format", "json")
    assert json.loads(p.stdout)["results"][0]["status"] == "skip"


def _said(stderr: str) -> list[str]:
    """The progress lines on stderr, without their `[  1.2s] ` time."""
    return [ln.split("s] ", 1)[1] for ln in stderr.splitlines() if ln.startswith("[")]


@pytest.mark.slow
def test_step_lines_say_each_step_as_it_starts_and_a_hung_one_beats(torch_python):
    """matmul hangs (emulator fault): the steps before it, then heartbeats, on stderr while it
    runs; the text report on stdout is untouched."""
    p = run_cli("smoke", "--python", torch_python, "--size", "64", "--timeout", "20",
                env=cli_env(NEURON_EMULATOR_FAULT="hang"), timeout=120)
    assert p.returncode == 4, p.stdout + p.stderr
    said = _said(p.stderr)
    assert said[:3] == ["smoke: import", "smoke: device", "smoke: matmul"], p.stderr
    assert said[3].startswith("  ... still in matmul (1"), p.stderr  # (10s) or (11s)
    assert "smoke:" not in p.stdout and "@@STEP" not in p.stdout + p.stderr


def test_json_keeps_stderr_quiet_unless_a_terminal_watches(torch_python):
    args = ["smoke", "--python", torch_python, "--device", "cpu", "--size", "16",
            "--iterations", "1", "--format", "json"]
    p = run_cli(*args, timeout=120)
    assert json.loads(p.stdout)["exit_code"] == 0 and "smoke:" not in p.stderr, p.stderr
    t = terminal.run([sys.executable, "-m", "neuron_env", *args], env=cli_env(), cwd=REPO)
    assert json.loads(t.stdout)["exit_code"] == 0, t.terminal
    said = _said(t.terminal.replace("\r\n", "\n"))
    assert said[:2] == ["smoke: import", "smoke: device"] and "smoke: matmul" in said


def test_smoke_compile_on_the_emulator_takes_the_neuron_compile_path(torch_python):
    """The emulated neuron device compiles with backend="neuron" (the emulator registers it as
    AWS's torch-neuronx does), so the neuron compile path is the one smoke-tested."""
    doc, r = smoke_json(torch_python, "--size", "64", "--compile")
    assert doc["emulated"] is True
    assert r["smoke.compile"]["details"]["backend"] == "neuron", r["smoke.compile"]
    assert r["smoke.compile"]["status"] == "pass", r["smoke.compile"]["summary"]
