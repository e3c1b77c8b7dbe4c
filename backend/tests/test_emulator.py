"""The emulated backend against the real torch 2.13.0 CPU build in a real venv."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.integration

import ast  # noqa: E402

NAMES = [n.name for n in ast.parse((HERE / "scenarios.py").read_text()).body
         if isinstance(n, ast.FunctionDef) and any(
             isinstance(d, ast.Name) and d.id == "scenario" for d in n.decorator_list)]


def run_py(python: str, code: str, env: dict | None = None, timeout: float = 180):
    import os

    e = dict(os.environ, **(env or {}))
    return subprocess.run([python, "-W", "ignore::UserWarning:torch", "-c", code],
                          capture_output=True, text=True, timeout=timeout, env=e)


@pytest.fixture(scope="session")
def scenario_results(torch_python):
    import os

    env = dict(os.environ, NEURON_EMULATOR_DEVICES="4")  # multi-device scenarios
    p = subprocess.run([torch_python, str(HERE / "scenarios.py")], capture_output=True,
                       text=True, timeout=600, env=env)
    assert "@@SCENARIOS@@" in p.stdout, p.stderr[-3000:]
    return json.loads(p.stdout.split("@@SCENARIOS@@")[1])


@pytest.mark.parametrize("name", NAMES)
def test_scenario(scenario_results, name):
    r = scenario_results[name]
    assert r["ok"], r["error"]


def test_autoload_can_be_turned_off(torch_python):
    code = ("import torch, sys\nassert not hasattr(torch, 'neuron') or print('loaded')\n"
            "import neuron_emulator\nassert neuron_emulator.is_loaded()\n"
            "print(torch.randn(2, device='neuron').device)")
    p = run_py(torch_python, code, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert p.returncode == 0 and p.stdout.strip() == "neuron:0", p.stderr[-2000:]


def test_another_privateuse1_backend_is_left_alone(torch_python):
    code = ("import torch, warnings\n"
            "torch.utils.rename_privateuse1_backend('neuron')  # as the real torch-neuronx\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import neuron_emulator\n"
            "    assert neuron_emulator.load(from_autoload=True) is False\n"
            "print(w[0].category.__name__, '|', w[0].message)\n"
            "try:\n    neuron_emulator.load()\nexcept ImportError as e:\n    print('ERR', e)\n")
    p = run_py(torch_python, code, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert "NeuronEmulatorWarning | neuron-emulator not loaded: another PrivateUse1 backend" \
        in p.stdout
    assert "the real torch-neuronx?" in p.stdout and "ERR neuron-emulator cannot load" in p.stdout


def test_unsupported_torch_is_refused_clearly(torch_python):
    code = ("import torch\ntorch.__version__ = '2.99.0'\n"
            "import neuron_emulator._register as r\n"
            "try:\n    r.load()\nexcept ImportError as e:\n    print(e)\n")
    p = run_py(torch_python, code, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert "torch 2.99.0 is not supported" in p.stdout, p.stderr[-2000:]


def test_a_failing_load_never_breaks_import_torch(torch_python):
    # the crash fault kills the process on purpose; a plain failure must only warn
    code = ("import torch\nimport neuron_emulator\nprint(neuron_emulator.is_loaded())")
    p = run_py(torch_python, code, {"NEURON_EMULATOR_FAULT": "crash"})
    assert p.returncode != 0  # SIGSEGV while loading: the fault a smoke test must survive
    p = run_py(torch_python, code)
    assert p.returncode == 0 and p.stdout.strip() == "True"


def test_importing_the_emulator_before_torch(torch_python):
    code = "import neuron_emulator, torch\nprint(torch.zeros(1, device='neuron').device)"
    p = run_py(torch_python, code, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "neuron:0", p.stderr[-2000:]


def test_device_count_default_and_visible_cores(torch_python):
    code = "import torch\nprint(torch.neuron.device_count(), torch.accelerator.device_count())"
    env = {"NEURON_EMULATOR_DEVICES": "", "NEURON_RT_VISIBLE_CORES": "",
           "NEURON_EMULATOR_INSTANCE_TYPE": "", "NEURON_LOGICAL_NC_CONFIG": "",
           "NEURON_EMULATOR_DMI_DIR": "/nonexistent"}
    # the default machine: a trn2.3xlarge, 8 physical cores at LNC=2
    assert run_py(torch_python, code, env).stdout.split() == ["4", "4"]
    for itype, lnc, want in (("trn2.48xlarge", "", "64"), ("trn2.48xlarge", "1", "128"),
                             ("trn2.3xlarge", "1", "8"), ("trn1.2xlarge", "", "2"),
                             ("m5.large", "", "4")):
        p = run_py(torch_python, code, dict(env, NEURON_EMULATOR_INSTANCE_TYPE=itype,
                                             NEURON_LOGICAL_NC_CONFIG=lnc))
        assert p.stdout.split() == [want, want], (itype, lnc, p.stdout, p.stderr[-2000:])
    p = run_py(torch_python, code, dict(env, NEURON_EMULATOR_DEVICES="64",
                                         NEURON_RT_VISIBLE_CORES="4-7,9"))
    assert p.stdout.split() == ["5", "5"], p.stderr[-2000:]
    p = run_py(torch_python, code, dict(env, NEURON_RT_VISIBLE_CORES="3"))
    assert p.stdout.split() == ["1", "1"], p.stderr[-2000:]
    code = "import torch, neuron_emulator\nprint(neuron_emulator.status()['reason'])"
    p = run_py(torch_python, code, dict(env, NEURON_EMULATOR_DEVICES="2",
                                         NEURON_RT_VISIBLE_CORES="1-3"))
    assert "NEURON_RT_VISIBLE_CORES='1-3' names core(s) [2, 3]" in p.stdout, p.stdout
    p = run_py(torch_python, code, dict(env, NEURON_RT_VISIBLE_CORES="2-5"))
    assert "names core(s) [4, 5], but the emulated machine has 4 (a trn2.3xlarge" in p.stdout
    p = run_py(torch_python, code, dict(env, NEURON_LOGICAL_NC_CONFIG="3"))
    assert "NEURON_LOGICAL_NC_CONFIG='3': expected 1 or 2 on a trn2.3xlarge" in p.stdout
    code = "import torch, neuron_emulator\nprint(neuron_emulator.status()['machine'])"
    p = run_py(torch_python, code, dict(env, NEURON_EMULATOR_INSTANCE_TYPE="trn2.48xlarge"))
    assert "'instance_type': 'trn2.48xlarge'" in p.stdout and "'devices': 64" in p.stdout


def test_default_machine_follows_this_ec2_instance(torch_python, tmp_path):
    """On an EC2 instance (DMI) the emulated machine is that instance; elsewhere, and on a
    non-Trainium EC2 type, the smallest Trn2; the variable still wins."""
    code = ("import torch, neuron_emulator\n"
            "print(torch.neuron.device_count(), neuron_emulator.status()['machine']['from'])")
    env = {"NEURON_EMULATOR_DEVICES": "", "NEURON_RT_VISIBLE_CORES": "",
           "NEURON_EMULATOR_INSTANCE_TYPE": "", "NEURON_LOGICAL_NC_CONFIG": "",
           "NEURON_EMULATOR_DMI_DIR": str(tmp_path)}
    (tmp_path / "sys_vendor").write_text("Amazon EC2\n")
    (tmp_path / "product_name").write_text("trn2.48xlarge\n")
    p = run_py(torch_python, code, env)
    assert p.stdout.startswith("64 this EC2 instance (DMI"), p.stdout + p.stderr[-2000:]
    p = run_py(torch_python, code, dict(env, NEURON_EMULATOR_INSTANCE_TYPE="trn1.2xlarge"))
    assert p.stdout.startswith("2 NEURON_EMULATOR_INSTANCE_TYPE"), p.stdout
    (tmp_path / "product_name").write_text("m5.large\n")
    assert run_py(torch_python, code, env).stdout.startswith("4 default")
    (tmp_path / "sys_vendor").write_text("QEMU\n")
    (tmp_path / "product_name").write_text("trn2.48xlarge\n")
    assert run_py(torch_python, code, env).stdout.startswith("4 default")


def test_fault_injection_still_works(torch_python):
    code = ("import torch\na = torch.ones(4, 4, device='neuron')\n"
            "print(bool(torch.equal((a @ a).cpu(), (a.cpu() @ a.cpu()))))")
    assert run_py(torch_python, code, {"NEURON_EMULATOR_FAULT": "perturb"}).stdout.strip() \
        == "False"
    p = run_py(torch_python, code, {"NEURON_EMULATOR_FAULT": "noisy"})
    assert "hello from a noisy backend" in p.stdout and "running mm" in p.stdout
    try:
        run_py(torch_python, code, {"NEURON_EMULATOR_FAULT": "hang"}, timeout=20)
    except subprocess.TimeoutExpired:
        pass
    else:
        raise AssertionError("the hang fault returned")
