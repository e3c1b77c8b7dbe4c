"""`neuron-env scan` as users run it: exit codes, JSON/SARIF on stdout, --diff applied with the
real `patch`, --fix, a process pool, and the scanned code never run."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.helpers.cli import cli_env

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "scan" / "project"
SCHEMA = json.loads((REPO / "neuron_env" / "schemas" / "scan.schema.json").read_text())
SARIF = json.loads((REPO / "tests" / "fixtures" / "sarif-schema-2.1.0.json").read_text())
FIXED = {"xla.device", "xla.process_group", "xla.init_method", "xla.device_string",
         "xla.optimizer_step"}


def scan(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuron_env", "scan", *args],
                          capture_output=True, text=True, env=cli_env(), cwd=cwd, timeout=120)


def test_exit_codes_and_error_envelope(tmp_path):
    assert scan(str(FIX)).returncode == 1
    assert scan(str(FIX), "--exit-zero").returncode == 0
    assert scan(str(FIX), "--select", "cuda").returncode == 0            # info < warning
    assert scan(str(FIX), "--select", "cuda", "--fail-on", "info").returncode == 1
    bad = scan(str(FIX), "--select", "xla.nope")
    assert bad.returncode == 2 and "no such rule" in bad.stderr and "Traceback" not in bad.stderr
    missing = scan(str(tmp_path / "missing"), "--format", "json")
    assert missing.returncode == 2
    doc = json.loads(missing.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["error"]["code"] == "usage"
    assert scan(str(FIX), "--diff", "--fix").returncode == 2


def test_json_sarif_and_list_rules(tmp_path):
    res = scan(".", "--format", "json", cwd=FIX)
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert res.returncode == doc["exit_code"] == 1
    assert doc["counts"]["total"] == len(doc["findings"]) > 40
    sarif = json.loads(scan(".", "--format", "sarif", cwd=FIX).stdout)
    jsonschema.validators.validator_for(SARIF)(SARIF).validate(sarif)
    rules = json.loads(scan("--list-rules", "--format", "json").stdout)
    jsonschema.validate(rules, SCHEMA)
    assert len(rules["rules"]) >= 30
    assert "compile.dynamic" in scan("--list-rules").stdout


def test_diff_applies_with_patch_and_the_result_rescans_clean(tmp_path):
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed (apt-get install -y patch)")
    work = tmp_path / "copy"
    shutil.copytree(FIX, work)
    # CRLF line ends and no newline at the end of the file: the patch must still apply
    (work / "crlf.py").write_bytes(b"import torch_xla.core.xla_model as xm\r\nd = xm.xla_device()")
    before = json.loads(scan(".", "--format", "json", cwd=work).stdout)
    diff = subprocess.run([sys.executable, "-m", "neuron_env", "scan", ".", "--diff"],
                          capture_output=True, env=cli_env(), cwd=work, timeout=120)  # bytes
    assert diff.stdout.startswith(b"--- a/")
    assert (work / "xla_train.py").read_text() == (FIX / "xla_train.py").read_text()
    p = subprocess.run(["patch", "-p1", "--batch"], input=diff.stdout, cwd=work,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    for f in work.rglob("*.py"):
        ast.parse(f.read_text())
    after = json.loads(scan(".", "--format", "json", cwd=work).stdout)
    rules_after = {f["rule"] for f in after["findings"]}
    assert not FIXED & rules_after and after["counts"]["fixable"] == 0
    # the imports the rewrite left unused went too (crlf.py's xm, xla_train.py's dev and
    # xla_model), and their xla.import findings with them
    imports = [sum(f["rule"] == "xla.import" for f in d["findings"]) for d in (before, after)]
    assert imports[0] - imports[1] == 3
    assert after["counts"]["total"] == before["counts"]["total"] - before["counts"]["fixable"] - 3
    assert (work / "crlf.py").read_bytes() == b'import torch\r\nd = torch.device("neuron")'


def test_fix_applies_and_says_what_it_did(tmp_path):
    work = tmp_path / "copy"
    shutil.copytree(FIX, work)
    res = scan(".", "--fix", cwd=work)
    assert "fixed 10 finding(s) in 1 file(s)" in res.stdout
    assert 'torch.device("neuron")' in (work / "xla_train.py").read_text()
    assert scan(".", "--fix", "--format", "json", cwd=work).stdout.count('"applied": 0') == 1


def test_process_pool_gives_the_same_findings(tmp_path):
    for i in range(8):
        shutil.copy(FIX / "xla_train.py", tmp_path / f"t{i}.py")
    one = json.loads(scan(".", "--jobs", "1", "--format", "json", cwd=tmp_path).stdout)
    two = json.loads(scan(".", "--jobs", "2", "--format", "json", cwd=tmp_path).stdout)
    assert one["findings"] == two["findings"] and one["counts"]["total"] == 8 * 28


def test_scanned_code_is_never_run_nor_torch_imported(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n"
                                      "import torch_xla\n")
    code = ("import sys\nfrom neuron_env.cli import main\n"
            f"sys.argv=['neuron-env','scan',{str(tmp_path)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('IMPORTED=%s' % ','.join(m for m in ('torch', 'torch_xla') "
            "if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=cli_env(), timeout=60)
    assert "xla.import" in p.stdout and not marker.exists()
    assert p.stderr.split("IMPORTED=")[-1].strip() == ""
