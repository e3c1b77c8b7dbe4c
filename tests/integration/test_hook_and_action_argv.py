"""The argv the pre-commit hook and the GitHub Action build: options end with `--`, so a file
named `--exit-zero` (a Python file by its shebang: pre-commit's `types: [python]` takes it) is
scanned as a file, never taken for the option; the Action's SARIF goes through the one safe
writer, so a symlink committed in the scanned repository is refused, never written through.
Run here with this checkout's neuron-env (test_github_action.py installs it as the runner
does, in the slow tier)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.cli import REPO, cli_env

pytestmark = [pytest.mark.integration]
NEURON_ENV = str(Path(sys.executable).with_name("neuron-env"))
DASHED = "#!/usr/bin/env python3\nimport torch_xla.core.xla_model as xm\n"
CLEAN = "import torch\n"


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "--exit-zero").write_text(DASHED)
    (work / "--exit-zero").chmod(0o755)
    (work / "ok.py").write_text(CLEAN)
    return work


@pytest.mark.parametrize("hook", ["neuron-env-scan", "neuron-env-scan-fix"])
def test_precommit_hook_passes_file_names_after_double_dash(tmp_path, hook):
    """pre-commit runs `entry args... FILES` (https://pre-commit.com/#new-hooks)."""
    spec = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    entry = shlex.split(spec[hook]["entry"])
    assert entry[0] == "neuron-env" and spec[hook]["args"][-1] == "--"
    work = _work(tmp_path)
    argv = [NEURON_ENV, *entry[1:], *spec[hook]["args"], "--exit-zero", "ok.py"]
    p = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120,
                       env=cli_env())
    assert p.returncode == 1, p.stdout + p.stderr  # the finding fails the hook
    assert "--exit-zero:2:1" in p.stdout


def _scan_step() -> dict:
    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    return next(s for s in steps if s["id"] == "scan")


def _run_scan_step(work: Path, paths: str, sarif: str = "neuron-env-scan.sarif"
                   ) -> subprocess.CompletedProcess[str]:
    out = work.parent / "github-output"
    out.write_text("")
    env = cli_env(NEURON_ENV=NEURON_ENV, SCAN_PATHS=paths, FAIL_ON="error", SARIF_FILE=sarif,
                  SCAN_ARGS="", GITHUB_OUTPUT=str(out))
    script = work.parent / "scan.sh"
    script.write_text(_scan_step()["run"])
    # the runner's bash: `bash --noprofile --norc -eo pipefail {0}`
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=work, capture_output=True, text=True, timeout=120, env=env)


def test_action_passes_paths_after_double_dash(tmp_path):
    work = _work(tmp_path)
    p = _run_scan_step(work, "--exit-zero ok.py")
    assert p.returncode == 1, p.stdout + p.stderr
    sarif = (work / "neuron-env-scan.sarif").read_text()
    assert "xla.import" in sarif and "--exit-zero" in sarif


def test_action_refuses_a_committed_sarif_symlink(tmp_path):
    work = _work(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (work / "neuron-env-scan.sarif").symlink_to(victim)
    p = _run_scan_step(work, "ok.py")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "symbolic link" in p.stderr and "::error title=neuron-env scan::" in p.stdout
    assert victim.read_text() == "keep me\n"
    assert (work / "neuron-env-scan.sarif").is_symlink()


def test_scan_output_writes_the_report_and_nothing_on_stdout(tmp_path):
    work = _work(tmp_path)
    p = subprocess.run([NEURON_ENV, "scan", "--format", "json", "--output", "r.json", "--",
                        "ok.py"], cwd=work, capture_output=True, text=True, timeout=120,
                       env=cli_env())
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr
    assert '"neuron-env.scan/1"' in (work / "r.json").read_text()
