"""Fixtures shared by tests/ and backend/tests/: ONE real target venv with torch 2.13.0 (the
CPU wheel this machine's pip configuration finds on disk) and the emulated backend."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def torch_python(tmp_path_factory) -> str:
    """The interpreter of a venv holding torch 2.13.0 and the freshly built emulator wheel
    (rebuilt only when backend/ changed: a worker never reinstalls it under another's feet)."""
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
    return str(py)


TRANSFORMERS = "transformers==5.25.0"  # tiny configs built in code: no model is downloaded


@pytest.fixture(scope="session")
def hf_python(torch_python) -> str:
    """torch_python's venv with Hugging Face transformers (pinned) installed once, under the
    cache lock, constrained to the venv's own torch so pip never swaps it. Skips, saying why,
    when it cannot be installed (no index with transformers and its dependencies)."""
    py = Path(torch_python)
    probe = [str(py), "-c", "import transformers; print(transformers.__version__)"]
    with _cache_lock():
        r = subprocess.run(probe, capture_output=True, text=True, timeout=300)
        if r.returncode != 0 or r.stdout.strip() != TRANSFORMERS.split("==")[1]:
            torch_ver = subprocess.run(
                [str(py), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                capture_output=True, text=True, timeout=60).stdout.strip()
            pins = py.parent.parent / ".hf-constraints.txt"
            pins.write_text(f"torch=={torch_ver}\n")
            r = subprocess.run([str(py), "-m", "pip", "install", "-q", TRANSFORMERS, "-c",
                                str(pins)], capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                pytest.skip(f"cannot install {TRANSFORMERS} into the torch test venv: "
                            f"{r.stderr.strip()[-500:]}")
    return torch_python


def pytest_collection_modifyitems(config, items):
    """A test that needs the torch venv (real torch 2.13.0: ~1 GB to unpack on a cold machine,
    seconds of `import torch` per target process) is `slow`: the default run leaves it to
    `-m slow`, which .ci/run also runs."""
    slow = pytest.mark.slow
    for item in items:
        if {"torch_python", "hf_python"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(slow)
