"""Rendered scripts with hostile values: every value quoted for its place (or refused with exit
2), placeholders filled in one pass, credentials warned about or read at boot, and the
user-data's retries kept for what time can fix. The rendered commands run for real under bash
against a recording stand-in for neuron-env."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from neuron_env.bootstrap.userdata import BootstrapOptions, component, userdata
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.integration
SHELLCHECK = shutil.which("shellcheck")
# neuron-env is not on the public index: every rendering names its source (#44)
INDEX = "https://pypi.internal.example.com/simple"
SRC = {"source": "neuron-env==0.1.0", "source_index_url": INDEX}
SRC_ARGS = ("--source", "neuron-env==0.1.0", "--source-index-url", INDEX)

RECORDER = """#!/bin/bash
printf '%s\\n' "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@")" \\
    >>"$RECORD"
case "$1" in
  install) echo '{"status": "installed"}'; exit "${FAKE_INSTALL_RC:-0}" ;;
  --version) echo "neuron-env 0.0.0" ;;
esac
exit 0
"""


def _tool(tmp_path: Path) -> Path:
    """A tool venv whose python and neuron-env only record their arguments."""
    tool = tmp_path / "tool"
    (tool / "bin").mkdir(parents=True)
    for name in ("neuron-env", "python"):
        f = tool / "bin" / name
        f.write_text(RECORDER)
        f.chmod(0o755)
    return tool


def _calls(record: Path) -> list[list[str]]:
    return [json.loads(x) for x in record.read_text().splitlines()] if record.exists() else []


@pytest.mark.parametrize("source", ["x@@VENV@@", "'@@VENV@@", "@@ENV@@", "a'b",
                                    "--index-url=https://evil.example/simple"])
def test_component_values_never_become_commands(tmp_path, source):
    tool = _tool(tmp_path)
    venv = "/opt/v;touch PWNED;'$(touch PWNED2)'"
    text = component(BootstrapOptions(source=source, source_index_url=INDEX,
                                      venv=venv, tool_venv=str(tool),
                                      python=str(tool / "bin/python"),
                                      log_dir=str(tmp_path / "logs dir")))
    doc = yaml.safe_load(text)
    record = tmp_path / "record"
    for phase in doc["phases"]:
        for step in phase["steps"]:
            for cmd in step["inputs"]["commands"]:
                r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True,
                                   text=True, timeout=30, env={"RECORD": str(record),
                                                              "PATH": "/usr/bin:/bin"})
                assert r.returncode == 0, (cmd, r.stderr)
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()
    calls = _calls(record)
    pip = next(c for c in calls if c[:2] == ["-m", "pip"])
    assert pip[-2:] == ["--", source]  # the literal value, never an option
    inst = next(c for c in calls if c[:1] == ["install"])
    assert inst[inst.index("--venv") + 1] == venv


def test_userdata_source_is_never_an_option(tmp_path):
    """pip gets the source after `--`: `--source --index-url=...` is a requirement pip refuses,
    never an index it would use."""
    tool = _tool(tmp_path)
    (tool / "bin" / "neuron-env").unlink()  # not installed yet: install_self runs pip
    source = "--index-url=https://evil.example/simple"
    _run_userdata(tmp_path, BootstrapOptions(source=source, source_index_url=INDEX,
                                             tool_venv=str(tool)),
                  NEURON_ENV_RETRIES="1")
    pip = next(c for c in _calls(tmp_path / "record") if c[:2] == ["-m", "pip"])
    assert pip[-2:] == ["--", source], pip


def _run_userdata(tmp_path, opts: BootstrapOptions, **env) -> subprocess.CompletedProcess:
    script = tmp_path / "ud.sh"
    script.write_text(userdata(opts))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True,
                          timeout=30).returncode == 0
    base = {"PATH": "/usr/bin:/bin", "RECORD": str(tmp_path / "record"),
            "NEURON_ENV_LOG_DIR": str(tmp_path / "log"),
            "NEURON_ENV_STATE_DIR": str(tmp_path / "state"), "NEURON_ENV_RETRY_DELAY": "0",
            "NEURON_ENV_BASE_PYTHON": sys.executable}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120,
                          env={**base, **env}, cwd=tmp_path)


def test_userdata_quotes_venv_and_doctor_args(tmp_path):
    tool = _tool(tmp_path)
    opts = BootstrapOptions(**SRC, venv=f"{tmp_path}/bob's venv $(touch PWNED)",
                            tool_venv=str(tool), doctor_args="--skip 'a b' --only \"x y\"",
                            smoke=False)
    r = _run_userdata(tmp_path, opts)
    assert r.returncode == 0, r.stderr
    calls = _calls(tmp_path / "record")
    inst = next(c for c in calls if c[:1] == ["install"])
    assert inst[inst.index("--venv") + 1] == f"{tmp_path}/bob's venv $(touch PWNED)"
    doc = next(c for c in calls if c[:1] == ["doctor"])
    assert doc[-4:] == ["--skip", "a b", "--only", "x y"]
    assert not (tmp_path / "PWNED").exists()
    if SHELLCHECK:
        s = subprocess.run([SHELLCHECK, "-S", "style", str(tmp_path / "ud.sh")],
                           capture_output=True, text=True, timeout=60)
        assert s.returncode == 0, s.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (["--doctor-args", "--skip 'a b"], "cannot be split"),
    (["--venv", "/opt/v\nrm -rf /"], "control character"),
    (["--source", "x\ty"], "control character"),
    (["--neuron-index-url-from", "ssm:/x;rm"], "not ssm:/NAME or env:VAR"),
    (["--neuron-index-url-from", "env:A", "--neuron-index-url", "https://h/simple"],
     "both given"),
])
def test_what_cannot_be_quoted_is_refused(args, needle):
    for cmd in ("userdata", "imagebuilder-component"):
        if cmd == "imagebuilder-component" and args[0] == "--doctor-args":
            continue
        r = run_cli(cmd, *SRC_ARGS, *args)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, \
            (cmd, r.stderr)


def test_credentials_in_index_urls_are_refused_and_can_be_read_at_boot(tmp_path):
    # issue #25 item 13: refused (exit 2, no script), the safer way named
    r = run_cli("userdata", *SRC_ARGS, "--neuron-index-url", "https://ci:tok@mirror/simple")
    assert r.returncode == 2 and r.stdout == "" and "--neuron-index-url-from" in r.stderr
    assert "tok" not in r.stderr
    r = run_cli("userdata", *SRC_ARGS, "--neuron-index-url-from", "env:MIRROR_URL")
    assert r.returncode == 0 and "warning" not in r.stderr
    assert "index_from NEURON_ENV_NEURON_INDEX_URL env:MIRROR_URL" in r.stdout
    c = run_cli("imagebuilder-component", *SRC_ARGS, "--pytorch-index-url-from",
                "ssm:/ci/pytorch-url")
    assert c.returncode == 0 and "aws ssm get-parameter --name /ci/pytorch-url" in c.stdout
    # at boot: the URL comes from the environment and reaches install, never the log
    tool = _tool(tmp_path)
    opts = BootstrapOptions(**SRC, tool_venv=str(tool), venv=str(tmp_path / "v"), smoke=False,
                            neuron_index_from="env:MIRROR_URL")
    probe = tool / "bin/neuron-env"
    probe.write_text(RECORDER.replace("exit 0\n", 'echo "$NEURON_ENV_NEURON_INDEX_URL" '
                                      '>"$RECORD.url"; exit 0\n'))
    run = _run_userdata(tmp_path, opts, MIRROR_URL="https://ci:tok@mirror/simple")
    assert run.returncode == 0, run.stderr
    assert Path(str(tmp_path / "record") + ".url").read_text().strip() == \
        "https://ci:tok@mirror/simple"
    assert "tok" not in (tmp_path / "log/bootstrap.log").read_text()
    missing = _run_userdata(tmp_path, opts, NEURON_ENV_STATE_DIR=str(tmp_path / "state2"))
    assert missing.returncode == 2 and "env:MIRROR_URL is empty" in missing.stderr


def test_deterministic_failures_are_not_retried_and_say_what_to_do(tmp_path):
    tool = _tool(tmp_path)
    afile = tmp_path / "venv-is-a-file"
    afile.write_text("")
    r = _run_userdata(tmp_path, BootstrapOptions(
        **SRC, tool_venv=str(tool), venv=str(afile), smoke=False))
    assert r.returncode == 2 and "exists and is not a directory" in r.stderr
    assert "retry" not in r.stderr
    nopy = tmp_path / "python-without-venv"
    nopy.write_text("#!/bin/bash\nexit 1\n")
    nopy.chmod(0o755)
    r = _run_userdata(tmp_path, BootstrapOptions(
        **SRC, tool_venv=str(tool), venv=str(tmp_path / "v"), smoke=False),
        NEURON_ENV_BASE_PYTHON=str(nopy))
    assert r.returncode == 2 and "python3-venv" in r.stderr and "retry" not in r.stderr
    # neuron-env install's own exit 2 (configuration): said once, not retried five times
    r = _run_userdata(tmp_path, BootstrapOptions(
        **SRC, tool_venv=str(tool), venv=str(tmp_path / "v"), smoke=False), FAKE_INSTALL_RC="2")
    assert r.returncode == 2 and "not retried" in r.stderr and "retry 1/" not in r.stderr
    assert len([c for c in _calls(tmp_path / "record") if c[:1] == ["install"]]) == 1
