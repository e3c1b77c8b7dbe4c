"""trial's pure parts: options, the pad/bucket advice, the runner's parsing of the inside
script's document (a finished subprocess stood in by a Completed), and the views."""

from __future__ import annotations

import json

import jsonschema
import pytest

from neuron_env.errors import UsageError
from neuron_env.guards.proc import Completed
from neuron_env.inside import MARKER
from neuron_env.report.model import Report, exit_code
from neuron_env.report.render import render
from neuron_env.trial import advice, runner, views
from neuron_env.trial.options import TrialOptions, parse_shapes, parse_sizes, validate
from tests.helpers.cli import REPO

SCHEMA = json.loads((REPO / "neuron_env/schemas/trial.schema.json").read_text())
OPTS = TrialOptions(model="builtin:mlp")
ROWS = [{"shape": [8, 128], "compilations": 1, "compile_s": 2.0, "steady_s": 0.010},
        {"shape": [16, 128], "compilations": 1, "compile_s": 2.2, "steady_s": 0.012},
        {"shape": [30, 128], "compilations": 1, "compile_s": 2.4, "steady_s": 0.020},
        {"shape": [32, 128], "compilations": 1, "compile_s": 2.6, "steady_s": 0.020}]


def test_shapes_and_sizes_parse_and_bad_ones_are_usage_errors():
    assert parse_shapes("8x128, 16X128,") == ((8, 128), (16, 128))
    assert parse_sizes("8,16") == (8, 16) and parse_shapes(None) == ()
    for bad in ("8xA", "0x4"):
        with pytest.raises(UsageError):
            parse_shapes(bad)
    with pytest.raises(UsageError):
        parse_sizes("8,x")


@pytest.mark.parametrize("kw", [dict(model="nocolon"), dict(device="tpu"),
                                dict(dtype="float16"), dict(iterations=0), dict(rtol=-1),
                                dict(shapes=((8,),), batch_sizes=(8,)),
                                dict(save_baseline="a", baseline="b"),
                                dict(model="missing_file.py:make")])
def test_validate_refuses_bad_options(kw):
    with pytest.raises(UsageError):
        validate(TrialOptions(**{"model": "builtin:mlp", **kw}))


def test_payload_makes_paths_absolute_and_a_file_model_id_host_independent(tmp_path):
    p = TrialOptions(model="models/m.py:make", save_baseline="b.pt").payload()
    assert p["model"].endswith("/models/m.py:make") and p["model"].startswith("/")
    assert p["model_id"] == "m.py:make" and p["save_baseline"].startswith("/")
    assert "timeout" not in p


def test_advice_buckets_when_padding_to_the_largest_wastes_too_much():
    st, summary, adv = advice.shapes({"rows": ROWS}, "pass")
    assert st == "warn" and adv["compilations"] == 4
    assert adv["buckets"] == [[8, 128], [16, 128], [32, 128]]  # 30 and 32 share a bucket
    assert "bucket" in summary and "3 graph(s) instead of 4" in summary
    assert adv["pad_waste"] > advice.PAD_WASTE_LIMIT
    assert adv["steps_per_compile"] == pytest.approx(2.3 / 0.016)


def test_advice_pads_close_shapes_and_reports_failed_or_cached_ones():
    rows = [dict(r, shape=[s, 128]) for r, s in zip(ROWS, (28, 30, 31, 32), strict=True)]
    _, summary, adv = advice.shapes({"rows": rows}, "pass")
    assert summary.endswith("pad every input to 32x128 (1 graph, 5% of the compute padding)")
    assert adv["pad_to"] == [32, 128]
    st, summary, _ = advice.shapes({"rows": [dict(ROWS[0], compilations=0)]}, "pass")
    assert st == "pass" and "already compiled" in summary
    st, summary, _ = advice.shapes({"rows": [ROWS[0], {"shape": [4, 4], "error": "E: no"}]},
                                   "fail")
    assert st == "fail" and "1 of 2 shapes failed (4x4: E: no)" in summary


def test_buckets_round_only_the_dimensions_that_vary():
    """resnet10t at batch 3 and 5: the batch varies, the 3 RGB channels and 30x30 do not."""
    rows = [dict(ROWS[0], shape=[3, 3, 30, 30]), dict(ROWS[1], shape=[5, 3, 30, 30])]
    _, summary, adv = advice.shapes({"rows": rows}, "pass")
    assert adv["varying_dims"] == [0]
    assert adv["buckets"] == [[4, 3, 30, 30], [8, 3, 30, 30]]  # never 3 -> 4 channels
    # 3 and 5 padded to 5: 2 of 10 batch rows are padding (20%, not the 33% mean overhead)
    assert adv["pad_waste"] == pytest.approx(0.2)
    assert summary.endswith("pad every input to 5x3x30x30 (1 graph, 20% of the compute padding)")
    rows = [dict(ROWS[0], shape=[3, 3, 30, 30]), dict(ROWS[1], shape=[9, 3, 30, 30])]
    _, summary, adv = advice.shapes({"rows": rows}, "pass")
    assert "power-of-two buckets would not reduce the 2 graphs" in summary


def test_pad_waste_is_the_padded_share_of_the_compute():
    """Issue 48 item 12: shapes 10 and 30 padded to 30 compute 60, of which 20 are padding:
    33%, where the mean per-shape overhead (100%, 0%) said 50%."""
    rows = [dict(ROWS[0], shape=[10, 8]), dict(ROWS[1], shape=[30, 8])]
    _, summary, adv = advice.shapes({"rows": rows}, "pass")
    assert adv["pad_waste"] == pytest.approx(1 / 3)
    assert "33% of the compute padding" in summary and "50%" not in summary


def test_advice_follows_the_actual_failure():
    crash = advice.fix("eager", "fail", {"crashed": True}, OPTS)
    assert "crashes on the device" in crash and "--rtol" not in crash
    out = advice.fix("eager", "fail", {"mismatches": [{"tensor": "output"}],
                                       "first_divergence": {"module": "enc.1", "module_type":
                                                            "Linear"}}, OPTS)
    assert out.startswith("start at module enc.1 (Linear)") and "--rtol" not in out
    grads = advice.fix("eager", "fail", {"mismatches": [{"tensor": "grad.w"}],
                                         "tolerance_used": 3.0}, OPTS)
    assert "looser --rtol/--atol may be right" in grads
    tracing = advice.fix("compile", "fail", {"phase": "tracing", "user_frame": "m.py:3 `f(x)`",
                                             "root_cause": "RuntimeError: no fake impl"}, OPTS)
    assert "aot_eager" not in tracing and "m.py:3" in tracing and "no fake impl" in tracing
    backend = advice.fix("compile", "fail", {"phase": "backend", "aot_eager_helps": True}, OPTS)
    assert "--compile-backend aot_eager" in backend
    eager_sweep = advice.shapes({"rows": [{"shape": [2, 8], "steady_s": 0.1}], "mode": "eager",
                                 "eager_summary": "2 shapes ran in EAGER mode"}, "warn")
    assert eager_sweep == ("warn", "2 shapes ran in EAGER mode", {})


class Finished:
    """Stands for proc.Running: the subprocess already finished with this outcome."""

    def __init__(self, stdout="", stderr="", rc=0, timed_out=False):
        self.c = Completed(("py",), None if timed_out else rc, stdout, stderr, 1.0, timed_out)

    def result(self):
        return self.c


def doc_of(*results, **extra):
    body = json.dumps({"results": list(results), "emulated": True, **extra})
    return Finished(stdout="noise\n" + MARKER + body + MARKER + "\n",
                    stderr="@@STEP eager@@\n")


def test_runner_turns_the_document_into_labelled_results_with_fixes():
    eager = {"name": "eager", "status": "fail", "summary": "MISMATCH: worst grad.0.weight",
             "ok": False, "tensors": 8, "mismatched_tensors": 1, "max_abs_error": 0.1,
             "max_rel_error": 0.2, "worst": "grad.0.weight", "rtol": 1e-3, "atol": 1e-5}
    shapes = {"name": "shapes", "status": "pass", "summary": "x", "rows": ROWS}
    tr = runner.finish(doc_of(eager, shapes, timing={"eager": {
        "first_call_s": 0.1, "iterations": 3, "median_s": 0.01}}), "py", OPTS)
    e, s = tr.results
    assert e.id == "trial.eager" and e.summary.startswith("[EMULATED] MISMATCH")
    assert e.observed["worst"] == "grad.0.weight" and e.expected == {"rtol": 1e-3, "atol": 1e-5}
    assert e.fix and s.status == "warn" and "bucket" in s.summary and s.details["advice"]
    rep = Report("neuron-env.trial/1", {"name": "neuron-env", "version": "0"}, None,
                 {"interpreter": {"path": "py"}, "model": "builtin:mlp", "device": "neuron",
                  "dtype": "float32", "emulated": True, **tr.info}, tr.results,
                 exit_code(tr.results), view=views.render_text)
    jsonschema.validate(json.loads(render(rep, "json")), SCHEMA)
    text = render(rep, "text")
    assert "Timing (synchronised fwd+bwd" in text and "30x128" in text
    md = views.render_markdown(rep)
    assert "| ❌ | `trial.eager` |" in md and "### What to do" in md and "EMULATED" in md


def test_runner_usage_error_timeout_and_crash():
    with pytest.raises(UsageError, match="MODEL 'x:y' returned"):
        runner.finish(doc_of(usage_error={"message": "MODEL 'x:y' returned 42", "hint": "h"}),
                      "py", OPTS)
    (r,) = runner.finish(Finished(stderr="@@STEP model@@\n@@STEP eager@@\n", timed_out=True),
                         "py", OPTS).results
    assert r.id == "trial.eager" and r.timed_out and "during the eager step" in r.summary
    (r,) = runner.finish(Finished(stderr="@@STEP reference@@\nboom", rc=-11), "py",
                         OPTS).results
    assert r.id == "trial.reference" and "crashed (signal 11)" in r.summary
    (r,) = runner.finish(Finished(timed_out=True), "py", OPTS).results
    assert r.id == "trial.start_up"


def test_junit_view_and_no_torch_in_neuron_envs_own_process():
    import sys

    import neuron_env.cli.trial
    import neuron_env.commands.trial  # noqa: F401

    assert "torch" not in sys.modules
    r = runner.to_result({"name": "compile", "status": "fail", "summary": "failed: aten::cumsum",
                          "ops": ["aten::cumsum"]}, False, OPTS)
    rep = Report("neuron-env.trial/1", {"name": "neuron-env", "version": "0"}, None,
                 {"model": "builtin:mlp"}, (r,), 1)
    xml = render(rep, "junit")
    assert 'name="trial[builtin:mlp].compile"' in xml and "<failure" in xml
    assert "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0" in r.fix


def test_the_builtins_neuron_env_accepts_are_the_ones_the_inside_script_builds():
    import importlib.util

    from neuron_env.inside import script
    from neuron_env.trial.options import BUILTINS

    spec = importlib.util.spec_from_file_location("inside_trial", script("trial.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # stdlib only at import time: torch comes in main()
    # the built-ins live in _trial_models.py beside it (the script split along its steps)
    assert set(mod.load_model.__globals__["BUILTINS"]) == set(BUILTINS)
    with pytest.raises(UsageError, match="no built-in workload 'resnet'"):
        validate(TrialOptions(model="builtin:resnet"))
