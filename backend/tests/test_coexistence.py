"""Beside a real torch-neuronx (a stand-in package here), the emulator never registers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STAND_IN = '''"""Stand-in for AWS's torch-neuronx: registers PrivateUse1 as 'neuron' on import."""
import torch

if torch._C._get_privateuse1_backend_name() == "privateuseone":
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    _setup_privateuseone_for_python_backend("neuron")
REAL = True


def _autoload():
    pass


def backend(gm, example_inputs, **kwargs):
    global COMPILED
    COMPILED = True
    return gm.forward
'''


def stand_in(root: Path, entry_points: bool) -> Path:
    pkg = root / "torch_neuronx"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(STAND_IN)
    if entry_points:
        info = root / "torch_neuronx-2.13.3.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-neuronx\n"
                                       "Version: 2.13.3.0\n")
        (info / "entry_points.txt").write_text(
            "[torch.backends]\ntorch_neuronx = torch_neuronx:_autoload\n\n"
            "[torch_dynamo_backends]\nneuron = torch_neuronx:backend\n")
    return root


CHECK = """
import warnings
warnings.simplefilter("always")
import torch, torch_neuronx, neuron_emulator
assert getattr(torch_neuronx, "REAL", False), "the emulator's shim was imported"
assert not neuron_emulator.is_loaded(), neuron_emulator.status()
print("REASON", neuron_emulator.status()["reason"])
torch_neuronx.__dict__.setdefault("COMPILED", False)
"""


def run(python: str, root: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=str(root), PYTHONWARNINGS="ignore", **env)
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120,
                          env=e)


def test_importable_real_one_wins_when_the_emulator_autoloads_first(torch_python, tmp_path):
    root = stand_in(tmp_path, entry_points=False)
    p = run(torch_python, root, CHECK)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "a real torch-neuronx is installed" in p.stdout
    assert torch_python  # the emulator's autoload ran first and stepped aside


def test_real_one_loading_first_and_its_compile_backend(torch_python, tmp_path):
    root = stand_in(tmp_path, entry_points=True)
    code = CHECK + ("x = torch.randn(2)\n"
                    "torch.compile(lambda t: t + 1, backend='neuron')(x)\n"
                    "print('COMPILED', torch_neuronx.COMPILED)\n")
    p = run(torch_python, root, code)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "REASON" in p.stdout and "COMPILED True" in p.stdout, p.stdout


def test_explicit_imports_in_either_order(torch_python, tmp_path):
    root = stand_in(tmp_path, entry_points=False)
    for first, second in (("torch_neuronx", "neuron_emulator"),
                          ("neuron_emulator", "torch_neuronx")):
        code = (f"import torch, {first}, {second}\nimport neuron_emulator, torch_neuronx\n"
                "assert torch_neuronx.REAL and not neuron_emulator.is_loaded()\n"
                "print(torch._C._get_privateuse1_backend_name())\n")
        p = run(torch_python, root, code, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        assert p.returncode == 0 and p.stdout.strip() == "neuron", (first, p.stderr[-3000:])
