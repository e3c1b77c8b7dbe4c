"""Fixtures shared by tests/ and backend/tests/: ONE real target venv with torch 2.13.0 (the
CPU wheel this machine's pip configuration finds on disk) and the emulated backend."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests judge results, never speed: on a shared 2-core machine a slow example is
# load, not a bug (hypothesis' 200 ms deadline and its too-slow health check made them flake).
settings.register_profile("neuron-env", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("neuron-env")

REPO = Path(__file__).resolve().parent
TORCH = "torch==2.13.0"
CACHE = Path(os.environ.get("NEURON_ENV_TEST_CACHE", Path.home() / ".cache" / "neuron-env-tests"))


def _torch_venv() -> Path:
    """Build (or reuse) a venv with torch; only torch is cached, never our own code."""
    tag = f"{TORCH.replace('==', '-')}-py{sys.version_info[0]}{sys.version_info[1]}"
    venv = CACHE / tag
    py = venv / "bin" / "python"
    ok = py.exists() and subprocess.run(
        [str(py), "-c", "import importlib.metadata as m; assert m.version('torch')"],
        capture_output=True, timeout=60).returncode == 0
    if not ok:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       timeout=300)
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", TORCH], capture_output=True,
                           text=True, timeout=1800)
        if r.returncode != 0:
            pytest.skip(f"cannot install {TORCH} into a test venv: {r.stderr[-500:]}")
    return py


@contextlib.contextmanager
def _cache_lock():
    """One builder at a time: pytest-xdist workers share the cached torch venv."""
    import fcntl

    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _emulator_source_hash() -> str:
    import hashlib

    h = hashlib.sha256()
    for f in sorted((REPO / "backend").rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and ".egg-info" not in str(f):
            h.update(str(f.relative_to(REPO)).encode() + f.read_bytes())
    return h.hexdigest()


TRANSFORMERS = "transformers==5.25.0"  # tiny configs built in code: no model is downloaded
TIMM = "timm==1.0.31"  # --no-deps: timm needs torchvision, which PyPI builds against CUDA torch


@pytest.fixture(scope="session")
def torch_python(tmp_path_factory) -> str:
    """The interpreter of a venv holding torch 2.13.0, the freshly built emulator wheel
    (rebuilt only when backend/ changed) and the model libraries (transformers, timm): every
    install happens here, under the cache lock, before ANY test of any worker runs a target in
    the venv, so a worker never installs under another's feet (a later install while a trial
    ran once crashed that trial's `import torch`)."""
    from neuron_env.install import emulator_wheel

    with _cache_lock():
        py = _torch_venv()
        stamp, want = py.parent.parent / ".emulator-source", _emulator_source_hash()
        if not stamp.exists() or stamp.read_text() != want:
            whl = emulator_wheel.build(tmp_path_factory.mktemp("emulator-wheel"))
            subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps",
                            "--force-reinstall", str(whl)], check=True, timeout=300,
                           capture_output=True)
            stamp.write_text(want)
        _model_libs(py)
    return str(py)


def _installed(py: Path, name: str) -> str | None:
    r = subprocess.run([str(py), "-c", "import importlib.metadata as m, sys\ntry:\n"
                        " print(m.version(sys.argv[1]))\nexcept Exception:\n print('')", name],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() or None


def _model_libs(py: Path) -> None:
    """transformers (constrained to the venv's own torch, so pip never swaps it) and timm
    (--no-deps), pinned; a failure is written to .model-libs-error for hf_python's skip."""
    err = py.parent.parent / ".model-libs-error"
    want = {n: v for n, _, v in (x.partition("==") for x in (TRANSFORMERS, TIMM))}
    if all(_installed(py, n) == v for n, v in want.items()):
        err.unlink(missing_ok=True)
        return
    pins = py.parent.parent / ".hf-constraints.txt"
    pins.write_text(f"torch=={_installed(py, 'torch')}\n")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", TRANSFORMERS, "-c", str(pins)],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode == 0:
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", TIMM],
                           capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        err.write_text(r.stderr.strip()[-500:] or "pip failed")
    else:
        err.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def hf_python(torch_python) -> str:
    """torch_python, which has Hugging Face transformers (pinned) when it could be installed;
    skips, saying why, when it could not (no index with transformers and its dependencies)."""
    py = Path(torch_python)
    if _installed(py, "transformers") != TRANSFORMERS.split("==")[1]:
        err = py.parent.parent / ".model-libs-error"
        why = err.read_text() if err.exists() else "not installed"
        pytest.skip(f"cannot install {TRANSFORMERS} into the torch test venv: {why}")
    return torch_python


def pytest_collection_modifyitems(config, items):
    """A test that needs the torch venv (real torch 2.13.0: ~1 GB to unpack on a cold machine,
    seconds of `import torch` per target process) is `slow`: the default run leaves it to
    `-m slow`, which .ci/run also runs."""
    slow = pytest.mark.slow
    for item in items:
        if {"torch_python", "hf_python"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(slow)
