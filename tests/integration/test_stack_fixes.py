"""Every fix line is checked against the release it names: doctor's fix_command is RUN against
a fixture (the pip line into a real venv from local indexes on 127.0.0.1, PIP_CONFIG_FILE
empty; the apt line applied to the fixture root's dpkg database as apt would leave it), then
doctor runs again: the failure is gone."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import roots
from tests.helpers.cli import cli_env, run_cli
from tests.helpers.envs import add_dist, site_packages
from tests.helpers.wheels import IndexServer, Stand, build_index

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Neuron 2.20.0 (AWS's manifest) on trn1.32xlarge, torch-neuronx 2.1
STACK_220 = {"torch": "2.1.2", "torch-neuronx": "2.1.2.2.3.0", "torch-xla": "2.1.4",
             "libneuronxla": "2.0.4115.0", "neuronx-cc": "2.15.128.0",
             "neuronx-distributed": "0.9.0", "transformers-neuronx": "0.12.313"}
APT_220 = {"aws-neuronx-dkms": "2.18.12.0", "aws-neuronx-runtime-lib": "2.22.14.0",
           "aws-neuronx-collectives": "2.22.26.0", "aws-neuronx-tools": "2.19.0.0"}
NEURON = [Stand("libneuronxla", "2.0.4115.0"), Stand("libneuronxla", "2.0.4986.0"),
          Stand("neuronx-distributed", "0.9.0"), Stand("neuronx-distributed", "0.10.1")]
PUBLIC = [Stand("libneuronxla", "1.0"), Stand("numpy", "1.25.2"), Stand("numpy", "2.0.1")]
CC_META = ("Metadata-Version: 2.1\nName: neuronx-cc\nVersion: 2.15.128.0\n"
           "Requires-Dist: numpy (<=1.25.2,>=1.24.3)\nRequires-Dist: scipy\n")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    root = tmp_path_factory.mktemp("idx")
    neuron = build_index(root / "neuron", NEURON, hashes=False)
    public = build_index(root / "public", PUBLIC)
    with IndexServer(neuron.parent) as n, IndexServer(public.parent) as p:
        empty = root / "empty-pip.conf"
        empty.write_text("")
        yield {"neuron": n.url, "public": p.url, "pip_conf": str(empty)}


def _env(idx) -> dict:
    env = {k: v for k, v in cli_env().items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=idx["pip_conf"], PIP_INDEX_URL=idx["public"],
               PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               NEURON_ENV_NEURON_INDEX_URL=idx["neuron"])
    return env


def _venv(path: Path, pkgs: dict[str, str]) -> Path:
    """A real venv with pip (the fix line runs `<python> -m pip`), the release's packages as
    metadata."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    py = path / "bin" / "python"
    site = site_packages(py)
    for name, ver in pkgs.items():
        add_dist(site, name, ver)
    return py


def _root(base: Path, apt: dict[str, str]) -> Path:
    root = roots.make_root(base, os="ubuntu-22.04", instance="trn1.32xlarge", devices=16,
                           cores=2, driver=apt["aws-neuronx-dkms"], packages=apt)
    roots.add_neuron_tools(root)
    return root


def doctor(root: Path, py: Path, release: str, env: dict) -> dict:
    p = run_cli("doctor", "--format", "json", "--root", str(root), "--python", str(py),
                "--matrix", release, env=env, timeout=120)
    doc = json.loads(p.stdout)
    return {r["id"]: r for r in doc["results"]}


def run_fix(cmd: str, env: dict) -> None:
    p = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (cmd, p.stdout[-2000:], p.stderr[-2000:])


def apply_apt(root: Path, cmd: str) -> None:
    """What `sudo apt-get install -y 'name=VERSION*' ...` leaves in the fixture's dpkg
    database: each named package at the pinned version."""
    assert cmd.startswith("sudo apt-get install"), cmd
    status = root / "var/lib/dpkg/status"
    pins = dict(re.fullmatch(r"([a-z0-9.+-]+)=([0-9.]+)\*", w).groups()  # type: ignore[union-attr]
                for w in shlex.split(cmd)[4:])
    text = status.read_text()
    for name, ver in pins.items():
        text = re.sub(rf"(Package: {re.escape(name)}\n(?:.+\n)*?Version: )\S+", rf"\g<1>{ver}",
                      text)
    status.write_text(text)


def test_the_next_release_libneuronxla_fix_runs_and_the_failure_is_gone(tmp_path, indexes):
    env = _env(indexes)
    py = _venv(tmp_path / "v", {k: v for k, v in STACK_220.items() if k != "libneuronxla"})
    # what a loose dependency (libneuronxla>=2.0) pulled in: the next release's build
    run_fix(f"{py} -m pip install libneuronxla==2.0.4986.0 --index-url {indexes['neuron']}",
            env)
    root = _root(tmp_path / "r", APT_220)
    r = doctor(root, py, "2.20.0", env)["backend.stack"]
    assert r["status"] == "fail" and "libneuronxla 2.0.4986.0" in r["summary"]
    assert indexes["neuron"] in r["fix_command"]  # the mirror, never the real index
    run_fix(r["fix_command"], env)
    assert doctor(root, py, "2.20.0", env)["backend.stack"]["status"] == "pass"


def test_the_missing_libneuronxla_fix_runs_and_the_failure_is_gone(tmp_path, indexes):
    env = _env(indexes)
    py = _venv(tmp_path / "v", {k: v for k, v in STACK_220.items() if k != "libneuronxla"})
    root = _root(tmp_path / "r", APT_220)
    r = doctor(root, py, "2.20.0", env)["backend.stack"]
    assert r["status"] == "fail" and r["summary"].startswith("libneuronxla is not installed")
    run_fix(r["fix_command"], env)
    after = doctor(root, py, "2.20.0", env)["backend.stack"]
    assert after["status"] == "pass", after["summary"]


def test_the_runtime_fix_line_of_2_21_1_runs_and_driver_versions_passes(tmp_path, indexes):
    """A trn1 host with 2.20's runtime under 2.21.1: the apt line pins 2.21.1's trn1/inf2
    runtime (never the Inf1 row, 2.12.23.0) and the failure is gone once it is applied."""
    env = _env(indexes)
    apt = {"aws-neuronx-dkms": "2.19.64.0", "aws-neuronx-runtime-lib": "2.22.14.0",
           "aws-neuronx-collectives": "2.23.135.0", "aws-neuronx-tools": "2.20.204.0"}
    stack = {"torch": "2.5.1", "torch-neuronx": "2.5.1.2.4.0", "libneuronxla": "2.1.714.0",
             "neuronx-cc": "2.16.372.0"}
    py = _venv(tmp_path / "v", stack)
    root = _root(tmp_path / "r", apt)
    r = doctor(root, py, "2.21.1", env)["driver.versions"]
    assert r["status"] == "fail" and "2.12.23.0" not in r["fix_command"]
    assert "'aws-neuronx-runtime-lib=2.23.112.0*'" in r["fix_command"]
    apply_apt(root, r["fix_command"])
    after = doctor(root, py, "2.21.1", env)
    assert after["driver.versions"]["status"] == "pass", after["driver.versions"]["summary"]
    assert after["backend.collectives"]["status"] == "pass"


def test_the_numpy_fix_runs_and_the_compiled_packages_range_holds(tmp_path, indexes):
    """numpy 2 pulled in beside a compiler built for numpy 1 ('compiled against API version'):
    the fix installs the range neuronx-cc declares; doctor again passes."""
    env = _env(indexes)
    py = _venv(tmp_path / "v", {k: v for k, v in STACK_220.items() if k != "neuronx-cc"})
    add_dist(site_packages(py), "neuronx-cc", "2.15.128.0", metadata=CC_META)
    run_fix(f"{py} -m pip install numpy==2.0.1", env)
    root = _root(tmp_path / "r", APT_220)
    r = doctor(root, py, "2.20.0", env)["backend.pins"]
    assert r["status"] == "fail" and "numpy 2.0.1 is outside neuronx-cc" in r["summary"]
    run_fix(r["fix_command"], env)
    after = doctor(root, py, "2.20.0", env)["backend.pins"]
    assert after["status"] == "pass" and after["observed"]["numpy"] == "1.25.2"
