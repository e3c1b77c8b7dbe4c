"""backend.companions for real: a venv whose torchvision import raises torchvision's real
error beside a +cpu torch, the import probe child, doctor --fix installing the matching build
from a local stand-in of the PyTorch CPU index; and (slow) the real torch 2.13.0+cpu venv with
PyPI's torchvision 0.28.0 wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.envs import add_dist, site_packages
from tests.helpers.wheels import Stand, build_index

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/doctor.schema.json").read_text())
NMS = "operator torchvision::nms does not exist"
PYPI_TORCHVISION = f"import torch\nraise RuntimeError({NMS!r})\n"


def record(site: Path, name: str, version: str, files: dict[str, str]) -> None:
    """A RECORD that lists the files, so pip can uninstall the distribution like a real one."""
    info = f"{name}-{version}.dist-info"
    rows = [*files, f"{info}/METADATA", f"{info}/INSTALLER", f"{info}/RECORD"]
    (site / info / "RECORD").write_text("".join(f"{r},,\n" for r in rows))


def fake_dist(site: Path, name: str, version: str, body: str) -> None:
    files = {f"{name}/__init__.py": body}
    add_dist(site, name, version, files=files)
    record(site, name, version, files)


def make_env(tmp_path, pip: bool = False):
    """A venv (with pip: --fix runs it) holding a stand-in torch 2.13.0+cpu and PyPI's (CUDA)
    torchvision 0.28.0, whose import raises torchvision's real error."""
    subprocess.run([sys.executable, "-m", "venv", *([] if pip else ["--without-pip"]),
                    str(tmp_path / "v")], check=True, timeout=120)
    py = tmp_path / "v/bin/python"
    site = site_packages(py)
    fake_dist(site, "torch", "2.13.0+cpu", "__version__ = '2.13.0+cpu'\n")
    fake_dist(site, "torchvision", "0.28.0", PYPI_TORCHVISION)
    index = build_index(tmp_path / "cpu-index", [
        Stand("torchvision", "0.28.0+cpu", ("torch==2.13.0",), body="import torch\n"),
        Stand("torchvision", "0.29.0+cpu", ("torch==2.14.0",), body="import torch\n")],
        hashes=True)
    (tmp_path / "pip.conf").write_text("")
    return py, cli_env(NEURON_ENV_PYTORCH_INDEX_URL=index.as_uri(),
                       PIP_CONFIG_FILE=str(tmp_path / "pip.conf"))


def doctor(py, env, *args):
    p = run_cli("doctor", "--format", "json", "--python", str(py), "--only",
                "backend.companions", *args, env=env, timeout=180)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    return {r["id"]: r for r in doc["results"]}["backend.companions"], doc, p


@pytest.fixture
def env(tmp_path):
    return make_env(tmp_path)


def test_pypi_torchvision_beside_cpu_torch_fails_with_the_real_error(env):
    py, e = env
    r, _, p = doctor(py, e)
    assert p.returncode == 1 and r["status"] == "fail", r
    assert NMS in r["summary"] and "does not import beside torch 2.13.0+cpu" in r["summary"]
    assert r["details"]["imports"]["modules"]["torchvision"]["error"] == f"RuntimeError: {NMS}"
    assert r["details"]["imports"]["seconds"] < 30
    assert "'torchvision==0.28.*' --index-url file://" in r["fix_command"]


@pytest.mark.slow  # a venv with pip (~20 s on a loaded 2-core machine) and a pip install
def test_doctor_fix_installs_the_cpu_build_from_the_pytorch_index(tmp_path):
    py, e = make_env(tmp_path, pip=True)
    r, doc, p = doctor(py, e, "--fix", "--yes")
    assert p.returncode == 0, (r, p.stderr)
    assert r["status"] == "pass" and "torchvision 0.28.0+cpu match torch 2.13.0+cpu" in r[
        "summary"]
    assert doc["fixes"][0]["ran"] and doc["fixes"][0]["exit_code"] == 0


def test_no_companion_starts_no_import_probe(env):
    py, e = env
    for d in site_packages(py).glob("torchvision*"):
        subprocess.run(["rm", "-rf", str(d)], check=True, timeout=30)
    r, _, p = doctor(py, e)
    assert r["status"] == "skip" and p.returncode == 0


def _pypi_torchvision_wheel(cache: Path) -> Path:
    """PyPI's torchvision 0.28.0 wheel (~7.5 MB, no torch pulled), downloaded once into the
    test cache with this machine's pip configuration (as the torch venv itself is)."""
    d = cache / "wheels"
    found = sorted(d.glob("torchvision-0.28.0-*.whl"))
    if found:
        return found[0]
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        "torchvision==0.28.0", "-d", str(d)], capture_output=True, text=True,
                       timeout=600)
    found = sorted(d.glob("torchvision-0.28.0-*.whl"))
    if r.returncode != 0 or not found:
        pytest.skip(f"cannot download PyPI's torchvision 0.28.0: {r.stderr[-300:]}")
    return found[0]


def test_real_torch_and_pypi_torchvision(tmp_path, torch_python):
    """torch 2.13.0+cpu (the cached venv, reached through a .pth) and PyPI's torchvision
    0.28.0 unpacked beside it: the real `import torchvision` failure, caught by the probe."""
    wheel = _pypi_torchvision_wheel(Path(torch_python).parents[2])  # the test cache
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")],
                   check=True, timeout=120)
    py = tmp_path / "v/bin/python"
    site = site_packages(py)
    (site / "torch-venv.pth").write_text(str(site_packages(Path(torch_python))) + "\n")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    r, _, p = doctor(py, cli_env())
    assert p.returncode == 1 and r["status"] == "fail" and NMS in r["summary"], r
    assert r["fix_command"].endswith("'torchvision==0.28.*' --index-url "
                                     "https://download.pytorch.org/whl/cpu")


# -- TorchAO Neuron (Neuron 2.34): the Neuron fork provides the torchao module itself ---------
def tao_env(tmp_path, *, upstream: bool, neuronx: str = "2.14.3.1.1802"):
    """A venv with a stand-in torch 2.14.0+cpu, torch-neuronx, torchao-neuron (whose files are
    the `torchao` package, as the real wheel's) and, when `upstream`, PyPI's torchao as well."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")],
                   check=True, timeout=120)
    py = tmp_path / "v/bin/python"
    site = site_packages(py)
    fake_dist(site, "torch", "2.14.0+cpu", "__version__ = '2.14.0+cpu'\n")
    add_dist(site, "torch-neuronx", neuronx)
    files = {"torchao/__init__.py": "__version__ = '0.18.0+neuron.1'\n"}
    add_dist(site, "torchao-neuron", "0.18.0+neuron.1", files=files)
    record(site, "torchao_neuron", "0.18.0+neuron.1", files)
    if upstream:
        add_dist(site, "torchao", "0.19.0")  # its files would overwrite the fork's
    (tmp_path / "pip.conf").write_text("")
    return py, cli_env(PIP_CONFIG_FILE=str(tmp_path / "pip.conf"))


def test_torchao_neuron_on_trn3_with_234_passes_its_import_probe(tmp_path):
    py, e = tao_env(tmp_path, upstream=False)
    r, _, _ = doctor(py, e, "--instance-type", "trn3.48xlarge")
    assert r["status"] == "pass", r
    assert r["details"]["imports"]["modules"] == {"torchao": None}


def test_upstream_torchao_beside_torchao_neuron_fails(tmp_path):
    py, e = tao_env(tmp_path, upstream=True)
    r, _, p = doctor(py, e, "--instance-type", "trn3.48xlarge")
    assert p.returncode == 1 and r["status"] == "fail", r
    assert "torchao 0.19.0 and torchao-neuron 0.18.0+neuron.1 are both installed" in r["summary"]
    assert r["fix_command"].startswith(f"{py} -m pip uninstall -y torchao && ")
    assert "torchao-neuron==0.18.0 --index-url https://pip.repos.neuron.amazonaws.com" in r[
        "fix_command"]


@pytest.mark.parametrize("instance, neuronx, words", [
    ("trn2.48xlarge", "2.14.3.1.1802", "trn3, trn3p, trn3e instances only; this is trn2"),
    ("trn3.48xlarge", "2.14.3.0.1711", "needs torch-neuronx>=2.14.3.1, found torch-neuronx "
                                       "2.14.3.0.1711"),
])
def test_torchao_neuron_on_trn2_or_with_an_older_backend_warns(tmp_path, instance, neuronx,
                                                                words):
    py, e = tao_env(tmp_path, upstream=False, neuronx=neuronx)
    r, _, _ = doctor(py, e, "--instance-type", instance)
    assert r["status"] == "warn" and words in r["summary"], r
