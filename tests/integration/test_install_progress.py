"""What a person (a terminal) and a log (no terminal) see while `neuron-env install` downloads:
real pip fetching a 1.2 MB wheel over HTTP on loopback from the test indexes. Under a
pseudo-terminal: the confirmation prompt (answered late: that wait is not install time) and
a live bar; without one: heartbeat lines, no bar."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import terminal
from tests.helpers.cli import REPO
from tests.helpers.envs import make_venv
from tests.helpers.indexes import BLOB, PY312, build_download_indexes, needs312, pip_env
from tests.helpers.roots import trn2_host
from tests.helpers.wheels import IndexServer

pytestmark = [pytest.mark.integration, needs312]  # both tests take 20-30 s here: slow too
PROMPT_WAIT = 3.0  # seconds the "user" takes to answer the prompt


@pytest.fixture(scope="module")
def dl(tmp_path_factory):
    base = tmp_path_factory.mktemp("dl")
    return build_download_indexes(base / "indexes"), trn2_host(base / "root")


def _argv(root, py) -> list[str]:
    return [sys.executable, "-m", "neuron_env", "install", "--root", str(root), "--python",
            str(py), "--installer", "pip", "--format", "json"]


@pytest.mark.slow
def test_on_a_terminal_the_prompt_wait_is_left_out_and_a_bar_shows_the_download(dl, tmp_path):
    idx, root = dl
    py = make_venv(tmp_path / "t", PY312)
    with IndexServer(idx["public_big"], rate=1_000_000, free=1) as public:  # ~1 s
        env = pip_env(idx, PIP_INDEX_URL=public.url, TERM="xterm-256color", NO_COLOR=None)
        t = terminal.run(_argv(root, py), env=env, cwd=REPO, prompt=b"Proceed? [y/N]",
                         answer_after=PROMPT_WAIT)
    term, wall = t.terminal, t.wall
    doc = json.loads(t.stdout)
    assert t.returncode == 0 and doc["status"] == "installed", term
    assert "Proceed? [y/N]" in term
    # the whole run took `wall`, of which at least PROMPT_WAIT at the prompt: what is reported
    # leaves that wait out (were it counted, elapsed_s would exceed wall - PROMPT_WAIT)
    assert doc["elapsed_s"] < wall - PROMPT_WAIT, (doc["elapsed_s"], wall)
    after = term.split("Proceed? [y/N]", 1)[1]
    first = float(after.split("[", 1)[1].split("s]", 1)[0])  # the first progress line after
    assert first < wall - PROMPT_WAIT, (first, wall)
    # the live bar: drawn with rich's bar glyphs and cursor control, naming the file
    assert "━" in after and "\x1b[" in after and "filelock-3.0.0-py3-none-any.whl" in after
    assert "downloaded 1 file, 1.2 MB in" in after


@pytest.mark.slow
def test_without_a_terminal_heartbeat_lines_and_no_bar(dl, tmp_path):
    """A slow link for the install's download (100 kB/s): the 1.2 MB wheel takes about 12 s,
    longer than the heartbeat period."""
    idx, root = dl
    py = make_venv(tmp_path / "t", PY312)
    with IndexServer(idx["public_big"], rate=100_000, free=1) as public:
        env = pip_env(idx, PIP_INDEX_URL=public.url, TERM="xterm-256color")
        r = subprocess.run([*_argv(root, py), "--yes"], capture_output=True, text=True,
                           env=env, cwd=REPO, timeout=300)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["status"] == "installed", r.stderr
    beats = [ln for ln in r.stderr.splitlines() if "... still installing" in ln]
    assert beats, r.stderr
    assert "fetching filelock-3.0.0-py3-none-any.whl (1.2 MB)" in beats[0]
    assert f"downloaded 1 file, {BLOB / 1e6:.1f} MB in" in r.stderr
    assert "━" not in r.stderr and "\x1b[" not in r.stderr and "\r" not in r.stderr
    # the installer's own output is in the log, whole
    log = Path(doc["log"]).read_text(encoding="utf-8")
    assert "Downloading http://127.0.0.1" in log and "Successfully installed" in log
