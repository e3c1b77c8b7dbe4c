"""Issue #25 items 6 and 30 with real installs from the local indexes: an install under umask 000
leaves nothing group- or world-writable; a host pip.conf that adds a hostile index never reaches
a step that resolves from its own index alone."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import REPO
from tests.helpers.envs import make_venv
from tests.helpers.indexes import pip_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real pip installs into venvs


def _install(idx, *args, env, umask=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuron_env", "install", "--yes", "--backend",
                           "emulated", "--torch", "2.13", "--installer", "pip", *args],
                          capture_output=True, text=True, env=env, timeout=300, cwd=REPO,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def test_install_under_umask_000_leaves_nothing_world_writable(idx, tmp_path):
    venv = tmp_path / "new-venv"
    r = _install(idx, "--python", sys.executable, "--venv", str(venv), env=pip_env(idx),
                 umask=0)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = []
    for dirpath, dirnames, filenames in os.walk(venv):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
                bad.append(f"{stat.S_IMODE(st.st_mode):o} {p}")
    assert not bad, f"{len(bad)} group/world-writable paths, e.g. {bad[:5]}"
    assert (venv / ".neuron-env" / "install-manifest.json").stat().st_mode & 0o444 == 0o444


def test_host_pip_conf_never_reaches_a_step_that_resolves_from_its_own_index(idx, tmp_path):
    home = tmp_path / "home"
    conf = home / ".config" / "pip" / "pip.conf"
    conf.parent.mkdir(parents=True)
    hostile = "http://127.0.0.1:9/hostile/simple"
    conf.write_text(f"[global]\nextra-index-url = {hostile}\n")
    env = pip_env(idx, PIP_CONFIG_FILE=None, HOME=str(home), XDG_CONFIG_HOME=None,
                  PIP_EXTRA_INDEX_URL=hostile.replace("hostile", "hostile-env"))
    py = make_venv(tmp_path / "t")
    r = _install(idx, "--python", str(py), "--format", "json", env=env)
    log = Path(py).parent.parent / ".neuron-env" / "logs"
    text = "".join(f.read_text() for f in log.glob("*.log"))
    steps = re.split(r"\n\$ ", text)
    own = [s for s in steps if "[neuron-env] resolve from " in s]
    assert own, r.stderr + text[-2000:]
    for s in own:
        looking = [ln for ln in s.splitlines() if "Looking in indexes" in ln]
        assert looking and "hostile" not in "".join(looking), looking
        assert idx["pytorch"] in looking[0] and "," not in looking[0], looking
