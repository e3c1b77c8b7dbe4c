"""Install against one enterprise-mirror-like loopback host that serves the Neuron, PyTorch and a
hostile public index under different paths, with and without basic auth: the right packages
(dependencies too) from the right paths, credentials never on a command line or in any output,
and a public index that needs credentials works to the last step."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from neuron_env.install.installers import find_uv
from tests.helpers.cli import REPO
from tests.helpers.envs import make_venv
from tests.helpers.indexes import PY312, needs312, pip_env
from tests.helpers.roots import trn2_host
from tests.helpers.wheels import IndexServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real pip/uv installs into venvs

USER, PASSWORD = "ci", "p@ss:w'o\"rd"
QUOTED = "p%40ss%3Aw%27o%22rd"


@pytest.fixture(scope="module")
def host_root(tmp_path_factory):
    return trn2_host(tmp_path_factory.mktemp("host") / "root")


def _urls(server: IndexServer, creds: str = "") -> dict:
    base = server.url[: -len("/simple")].replace("http://", f"http://{creds}")
    return {n: f"{base}/{n}/simple" for n in ("neuron", "pytorch", "public")}


def _env(idx, urls, **extra):
    return pip_env(idx, PIP_INDEX_URL=urls["public"], UV_INDEX_URL=urls["public"],
                   NEURON_ENV_NEURON_INDEX_URL=urls["neuron"],
                   NEURON_ENV_PYTORCH_INDEX_URL=urls["pytorch"], **extra)


def _descendants_cmdlines(pid: int, seen: list[str], stop: threading.Event,
                          locks: list[str]) -> None:
    """Every command line of pid's process tree (and every lock file), sampled until stop."""
    while not stop.is_set():
        for lock in {*Path(tempfile.gettempdir()).glob("neuron-env-install-*/lock.txt"),
                     *Path("/tmp").glob("neuron-env-install-*/lock.txt")}:
            with contextlib.suppress(OSError):
                locks.append(lock.read_text())
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid or int(d.name) == pid or any(f"[{ppid}]" in s for s in seen):
                seen.append(f"[{d.name}] {cmd}")
        time.sleep(0.02)


def _dists(py) -> dict[str, str]:
    code = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: "
            "d.version for d in m.distributions()}))")
    return json.loads(subprocess.run([str(py), "-c", code], capture_output=True, text=True,
                                     check=True, timeout=60).stdout)


@needs312
def test_three_indexes_on_one_host_with_a_hostile_public_one(idx, host_root, tmp_path):
    """Old code: every file on the host counted as the neuron index's, so the public
    libneuronxla 2.99 (a dependency) went in as 'neuron'."""
    py = make_venv(tmp_path / "v", PY312)
    with IndexServer(Path(idx["root"])) as mirror:
        urls = _urls(mirror)
        r = subprocess.run([sys.executable, "-m", "neuron_env", "install", "--yes", "--root",
                            str(host_root), "--python", str(py), "--installer", "pip",
                            "--format", "json"], capture_output=True, text=True,
                           env=_env(idx, urls), timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    got = _dists(py)
    assert got["torch-neuronx"] == "2.14.3.1.1" and got["libneuronxla"] == "2.2.0"
    assert got["torch"] == "2.14.0+cpu" and got["nki"] == "0.3.0"
    pk = {p["name"]: p for p in json.loads(r.stdout)["packages"]}
    assert pk["libneuronxla"]["index"] == "neuron" and pk["torch"]["index"] == "pytorch-cpu"
    assert "/neuron/files/" in pk["libneuronxla"]["url"]


@needs312
@pytest.mark.parametrize(("spelled", "installer"), [  # percent-encoded, and raw @ ' " :
    (QUOTED, "pip"), (PASSWORD, "pip"), (QUOTED, "uv")])
def test_credentials_stay_off_command_lines_and_outputs_and_a_private_public_index_works(
        idx, host_root, tmp_path, spelled, installer):
    if installer == "uv" and find_uv() is None:
        pytest.skip("uv is not installed (pip install uv): only pip was exercised")
    py = make_venv(tmp_path / "v", PY312)
    with IndexServer(Path(idx["root"]), auth=(USER, PASSWORD)) as mirror:
        urls = _urls(mirror, f"{USER}:{spelled}@")
        p = subprocess.Popen([sys.executable, "-m", "neuron_env", "install", "--yes", "--root",
                              str(host_root), "--python", str(py), "--installer", installer,
                              "--format", "json"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=_env(idx, urls), cwd=REPO)
        seen: list[str] = []
        locks: list[str] = []
        stop = threading.Event()
        t = threading.Thread(target=_descendants_cmdlines, args=(p.pid, seen, stop, locks))
        t.start()
        try:
            out, err = p.communicate(timeout=300)
        finally:
            stop.set()
            t.join()
    assert p.returncode == 0, out + err
    assert any(" install " in s and "--report" in s for s in seen), seen  # pip was sampled
    for s in seen:
        assert spelled not in s and "p@ss" not in s and "p%40" not in s, \
            f"credentials on a command line: {s}"
    doc = json.loads(out)
    man = (py.parent.parent / ".neuron-env/install-manifest.json").read_text()
    for where, text in (("stdout", out), ("stderr", err), ("manifest", man),
                        ("log", Path(doc["log"]).read_text())):
        for part in (QUOTED, "p@ss", "w'o", "p%40"):
            assert part not in text, (where, part)
    assert json.loads(man)["status"] == "complete"
    assert _dists(py)["filelock"] == "3.0.0"  # from the private public index, at the last step
    assert any("torch-neuronx @ http://127.0.0.1" in x for x in locks), locks  # sampled
    for x in locks:  # a lock that survives kill -9 holds no credentials
        assert spelled not in x and "p@ss" not in x and "p%40" not in x, x


@needs312
def test_a_repair_records_the_whole_installed_set(idx, host_root, tmp_path):
    """What an interrupted (kill -9) install leaves: every package in place, the manifest
    'incomplete'. The repair must vouch for all of them, dependencies (libneuronxla, filelock)
    included, so doctor --strict passes. Old code recorded the four requested packages."""
    py = make_venv(tmp_path / "v", PY312)
    env = pip_env(idx)
    args = [sys.executable, "-m", "neuron_env", "install", "--yes", "--root", str(host_root),
            "--python", str(py), "--installer", "pip", "--format", "json"]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    path = py.parent.parent / ".neuron-env/install-manifest.json"
    man = json.loads(path.read_text())
    man.update(status="incomplete", error="interrupted (killed) during install",
               packages=[p for p in man["packages"] if p["name"] == "torch"])
    path.write_text(json.dumps(man))
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    man = json.loads(path.read_text())
    got = {p["name"]: p for p in man["packages"]}
    assert man["status"] == "complete"
    assert got["libneuronxla"]["index"] == "neuron" and got["libneuronxla"]["sha256"]
    assert "filelock" in got and got["torch-neuronx"]["index"] == "neuron"
    d = subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root", str(host_root),
                        "--python", str(py), "--only", "backend", "--strict", "--format",
                        "json"], capture_output=True, text=True, env=env, timeout=120)
    res = {x["id"]: x for x in json.loads(d.stdout)["results"]}
    assert res["backend.origin"]["status"] == "pass", res["backend.origin"]
