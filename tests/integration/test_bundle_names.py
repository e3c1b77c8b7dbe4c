"""Issue #36 item 24: `bundle` lists the environment's log files on stderr; their names belong to
the venv's owner and may hold terminal escapes (a title change, a cleared screen): they are
escaped on stderr and in the archive's member names."""

from __future__ import annotations

import json
import tarfile

import pytest

from tests.helpers import roots
from tests.helpers.cli import run_cli
from tests.helpers.envs import make_venv

pytestmark = pytest.mark.integration


def test_log_names_with_terminal_escapes_are_escaped_everywhere(tmp_path):
    py = make_venv(tmp_path / "v")
    logs = py.parent.parent / ".neuron-env" / "logs"
    logs.mkdir(parents=True)
    evil = "install-\x1b]0;owned\x07\x1b[2J.log"
    (logs / evil).write_text("fine\n")
    out = tmp_path / "case.tar.gz"
    p = run_cli("bundle", "--out", str(out), "--python", str(py), "--root",
                str(roots.trn2_host(tmp_path / "r")), "--format", "json", timeout=120)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr and "install-" in p.stderr
    doc = json.loads(p.stdout)
    assert all("\x1b" not in m["name"] for m in doc["members"])
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert any("install-" in n for n in names)
    assert not any(ord(c) < 32 for n in names for c in n), names
