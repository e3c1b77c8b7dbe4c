"""#25 item 9: a `venv.py`, `pip.py`, `json.py`, `torch.py` ... in the caller's directory (or on
PYTHONPATH, for the isolated tool runs) is never imported by a child Python that neuron-env
starts: every target Python starts through neuron_env/target_python/ (`-I` and cwd `/` for tools; a
private cwd for workloads). Each planted module writes a marker file when imported; the
markers must stay absent. The CLI runs through its entry-point script, as users run it (a
`python -m neuron_env` from the planted directory would import the plants itself)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import roots
from tests.helpers.cli import cli_env
from tests.helpers.envs import make_venv
from tests.helpers.indexes import PY312, needs312, pip_env

pytestmark = pytest.mark.integration
NEURON_ENV = Path(sys.executable).parent / "neuron-env"
IN_CWD = ("venv", "ensurepip", "pip", "json", "torch", "runpy", "encodings")
ON_PATH = ("venv", "ensurepip", "pip", "torch")  # not json: the CLI's own process imports it


class Plants:
    def __init__(self, tmp: Path) -> None:
        self.cwd, self.path, self.marks = tmp / "cwd", tmp / "pythonpath", tmp / "marks"
        for d, names in ((self.cwd, IN_CWD), (self.path, ON_PATH)):
            d.mkdir()
            for name in names:
                mark = self.marks / f"{d.name}-{name}"
                (d / f"{name}.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
        self.marks.mkdir()

    def run(self, *args: str, env: dict | None = None, path: bool = True,
            timeout: float = 240) -> subprocess.CompletedProcess:
        extra = {"PYTHONPATH": str(self.path)} if path else {}
        return subprocess.run([str(NEURON_ENV), *args], capture_output=True, text=True,
                              env={**(env or cli_env()), **extra}, cwd=self.cwd,
                              timeout=timeout)

    def imported(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture
def plants(tmp_path):
    if not NEURON_ENV.is_file():
        pytest.skip(f"no entry-point script {NEURON_ENV} (install the project with pip -e)")
    return Plants(tmp_path)


def test_the_plants_do_fire_when_a_python_starts_in_their_directory(plants):
    """The trap is real: a plain `python -m venv` from that directory imports venv.py."""
    subprocess.run([sys.executable, "-m", "venv", "--help"], cwd=plants.cwd, timeout=60,
                   capture_output=True)
    assert plants.imported() == ["cwd-venv"]


def test_doctor_probe_and_bundle_import_no_planted_module(plants, tmp_path):
    py = make_venv(tmp_path / "v")
    root = roots.trn2_host(tmp_path / "r")
    p = plants.run("doctor", "--python", str(py), "--root", str(root), "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["target"]["interpreter"]["version"], p.stderr  # the probe did run
    out = tmp_path / "case.tar.gz"
    p = plants.run("bundle", "--out", str(out), "--python", str(py), "--root", str(root),
                   "--format", "json")
    assert p.returncode == 0 and out.is_file(), p.stderr
    assert plants.imported() == []


@pytest.mark.slow
@needs312
def test_install_venv_and_pip_import_no_planted_module(plants, idx, tmp_path):
    venv = tmp_path / "new-venv"
    host = roots.trn2_host(tmp_path / "host")
    p = plants.run("install", "--yes", "--root", str(host), "--python", PY312, "--venv",
                   str(venv), "--installer", "pip", "--format", "json", env=pip_env(idx))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["status"] == "installed"
    assert plants.imported() == []


def test_smoke_and_collectives_import_nothing_from_the_callers_directory(plants, torch_python):
    """Workloads keep the caller's environment (PYTHONPATH is theirs), not its directory."""
    p = plants.run("smoke", "--python", torch_python, "--size", "32", "--iterations", "1",
                   "--format", "json", path=False)
    assert json.loads(p.stdout)["exit_code"] == 0, p.stderr
    p = plants.run("collectives", "--python", torch_python, "--device", "neuron", "--sizes",
                   "8B", "--ops", "all_reduce", "--iterations", "1", "--format", "json",
                   path=False)  # no --world-size: the device count runs `-c "import json..."`
    assert json.loads(p.stdout)["exit_code"] == 0, p.stderr
    assert plants.imported() == []
