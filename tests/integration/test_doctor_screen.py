"""doctor's first screen on a bare host, end to end: each action once, apt merged at the pins,
numbered next steps in run order; piped, one line per item; under a real terminal (tmux at 80
columns), every line fits, no word or check id is split and each command pastes back whole."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time

import pytest

from neuron_env.matrix import catalog
from tests.helpers import roots
from tests.helpers.cli import REPO, cli_env, run_cli

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """A Trn2 host (per its DMI) with nothing installed: no driver, no packages, no devices."""
    return roots.make_root(tmp_path_factory.mktemp("bare") / "r", instance="trn2.48xlarge",
                           packages={})


def doctor(root, *extra):
    python = () if "--python" in extra else ("--python", sys.executable)
    return run_cli("doctor", "--root", str(root), *python, *extra)


def test_a_bare_host_prints_each_action_once_and_numbered_next_steps(bare):
    m = catalog.select(None)
    out = doctor(bare).stdout
    doc = json.loads(doctor(bare, "--format", "json").stdout)
    fixes = {r["id"]: r.get("fix_command") for r in doc["results"]}
    apt = out[out.index("Next steps:"):]
    for a in m.driver.apt:  # every package once, at its pin where the release pins it
        if a.version:
            assert out.count(f"{a.name}=") == 1, a.name
            assert f"'{a.name}={a.version}*'" in out
        else:  # a release with no confirmed pin (2.34): named once, unpinned
            assert f"{a.name}=" not in out, a.name
            assert re.search(rf"apt-get install -y [^\n]*\b{a.name}\b", apt), a.name
    assert out.count("sudo apt-get update") <= 2  # the Neuron repository's, deadsnakes' maybe
    tail = out[out.index("Next steps:"):]
    numbers = re.findall(r"^  (\d+)\. ", tail, re.M)
    assert numbers == [str(i) for i in range(1, len(numbers) + 1)] and len(numbers) >= 2
    first = [tail.index(k) for k in ("apt-get install -y", "smoke --python")]
    assert first == sorted(first)
    # JSON keeps every check's own fix
    assert fixes["backend.collectives"] and "dkms" not in fixes["backend.collectives"]
    assert fixes["driver.module"] == fixes["driver.packages"]
    for cmd in set(filter(None, fixes.values())):
        # each command once in the text, or merged into the one apt step
        assert out.count(cmd) <= 1, cmd


def test_piped_output_keeps_one_line_per_item(bare):
    out = doctor(bare).stdout.splitlines()
    doc = json.loads(doctor(bare, "--format", "json").stdout)
    for r in doc["results"]:
        assert any(ln.endswith(f"{r['summary']}  ({r['id']})") for ln in out), r["id"]
    commands = [ln.strip() for ln in out if ln.startswith("     ") and not ln.endswith(":")]
    assert commands and not any(c.endswith("\\") for c in commands)


def tmux_screen(argv: list[str], width: int) -> tuple[str, str]:
    """(the screen as the terminal shows it, the same with soft-wrapped lines joined)."""
    sock = f"ne-test-{time.monotonic_ns()}"
    tmux = ["tmux", "-L", sock]
    env = cli_env(TERM="xterm-256color", NO_COLOR="1")
    cmd = " ".join(map(shlex_quote, argv)) + "; echo __DONE__; sleep 60"
    subprocess.run([*tmux, "new-session", "-d", "-x", str(width), "-y", "300", cmd],
                   env=env, cwd=REPO, check=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-S", "0"], text=True,
                                    capture_output=True, check=True).stdout
            if "__DONE__" in screen:
                break
            time.sleep(0.2)
        joined = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "0"], text=True,
                                capture_output=True, check=True).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return screen.split("__DONE__")[0], joined.split("__DONE__")[0]


def shlex_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_doctor_fits_an_80_column_terminal(bare):
    doc = json.loads(doctor(bare, "--format", "json").stdout)
    screen, joined = tmux_screen([sys.executable, "-m", "neuron_env", "doctor", "--root",
                                  str(bare), "--python", sys.executable], 80)
    assert "Next steps:" in screen
    for ln in joined.splitlines():  # only a word no line can hold runs past the edge
        if len(ln) > 80:
            assert max(map(len, ln.split())) > 60, ln
    words = {w for ln in joined.splitlines() for w in ln.split() if len(w) <= 60}
    shown = {w for ln in screen.splitlines() for w in ln.split()}
    assert words <= shown  # no word split by the terminal
    for r in doc["results"]:
        assert f"({r['id']})" in shown or f"({r['id']})" in screen, r["id"]
    # each command, its `\`-continued lines joined as a shell reads them, is the one in JSON
    tail = joined[joined.index("Next steps:"):]
    pasted = re.sub(r" \\\n *", " ", tail)
    install = next(r["fix_command"] for r in doc["results"] if r["id"] == "backend.torch")
    assert install in pasted
    apt = next(ln for ln in pasted.splitlines() if "gpg --dearmor" in ln).strip()
    subprocess.run(["bash", "-n", "-c", apt], check=True)
    assert all((f"{a.name}=" if a.version else a.name) in apt
               for a in catalog.select(None).driver.apt)


def test_a_safe_fix_that_fails_is_said_failed_in_the_text(tmp_path):
    """doctor --fix --yes runs backend.emulator's safe fix (pip uninstall) in a venv without
    pip: it fails, and the text says so (not only its output on stderr)."""
    from tests.helpers.envs import add_dist, make_venv, site_packages

    py = make_venv(tmp_path / "v")
    site = site_packages(py)
    for name, ver in (("torch", "2.14.0"), ("torch-neuronx", "2.14.3.0.1711"),
                      ("neuron-emulator", "0.1.0")):
        add_dist(site, name, ver)
    root = roots.trn2_host(tmp_path / "r")
    args = ("--only", "backend.emulator", "--fix", "--yes")
    p = doctor(root, *args, "--python", str(py))
    assert p.returncode == 1, p.stderr
    assert "Fixes run (doctor --fix):" in p.stdout
    assert "backend.emulator: FAILED (exit 1" in p.stdout and "pip uninstall" in p.stdout
    doc = json.loads(doctor(root, *args, "--python", str(py), "--format", "json").stdout)
    assert doc["fixes"][0]["ran"] and doc["fixes"][0]["exit_code"] == 1
