"""Issue #45 (security round 4), the parts that run other processes: doctor's fix lines pasted
into bash with a hostile os-release, `--print-launch` lines run from a cwd holding a hostile
`json.py`, the inside scripts' files in a run directory with planted links."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.util.record import replace
from tests.helpers.facts import host

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
STUBS = ("sudo", "apt-get", "curl", "gpg", "tee", "install", "modprobe", "dpkg-reconfigure",
         "add-apt-repository", "aws", "neuron-env", "uv", "python", "uname")


@pytest.fixture()
def stubs(tmp_path) -> Path:
    d = tmp_path / "stubs"
    d.mkdir()
    for n in STUBS:
        body = 'exec "$@"' if n == "sudo" else 'echo "$0 $*" >> "$STUB_LOG"; cat >/dev/null' \
            if n == "tee" else 'echo "$0 $*" >> "$STUB_LOG"'
        (d / n).write_text(f"#!/bin/sh\n{body}\n")
        (d / n).chmod(0o755)
    return d


# -- finding 6: the image's VERSION_CODENAME is one quoted word of the apt fix line ------------
HOSTILE = ("noble $(touch {m}) x", "noble; touch {m}", "noble `touch {m}`",
           'noble" ; touch {m}; echo "', "noble\ntouch {m}", "noble && touch {m} #")


@pytest.mark.parametrize("codename", HOSTILE)
def test_a_hostile_codename_in_os_release_runs_nothing_when_the_fix_is_pasted(
        codename, stubs, tmp_path):
    marker = tmp_path / "ran"
    facts = host(module=None, apt={})
    facts = replace(facts, os=replace(facts.os, codename=codename.format(m=marker)))
    lines = [r.fix_command for r in checks.run_checks(facts, catalog.select("2.33"),
                                                        checks.Context(), checks.all_ids())
             if r.fix_command and "apt" in r.fix_command]
    assert lines, "no apt fix line for a host without the driver"
    env = dict(os.environ, PATH=f"{stubs}:/usr/bin:/bin", STUB_LOG=str(tmp_path / "log"),
               HOME=str(tmp_path))
    for line in lines:
        assert subprocess.run(["bash", "-n", "-c", line], capture_output=True).returncode == 0
        subprocess.run(["bash", "-c", line], capture_output=True, env=env, timeout=30,
                       cwd=tmp_path)
        assert not marker.exists(), f"the pasted fix ran the os-release text: {line}"
