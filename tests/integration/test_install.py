"""`neuron-env install` for real: pip (and uv) install stand-in wheels from local PEP 503
indexes (file:// and http on 127.0.0.1) into real venvs, isolated from this machine's pip
configuration. The "public" index plays PyPI: placeholders and higher, malicious versions."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.helpers.cli import REPO, cli_env
from tests.helpers.envs import make_venv, pyenv_python
from tests.helpers.indexes import NEURON, PY312, TORCHAO_NEURON, needs312, pip_env
from tests.helpers.roots import make_root, trn2_host
from tests.helpers.wheels import IndexServer, Stand, build_index, refused_url

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real pip/uv installs into venvs

SCHEMA = json.loads((REPO / "neuron_env/schemas/install.schema.json").read_text())


@pytest.fixture(scope="session")
def host_root(tmp_path_factory):
    return trn2_host(tmp_path_factory.mktemp("host") / "root")


def install(idx, *args, env=None, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuron_env", "install", "--yes", *args],
                          capture_output=True, text=True, env=env or pip_env(idx),
                          timeout=timeout, cwd=REPO)


def as_json(r) -> dict:
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        raise AssertionError(f"not JSON (rc {r.returncode}):\n{r.stdout}\n{r.stderr}") from None
    jsonschema.validate(doc, SCHEMA)
    return doc


def dists(py) -> dict[str, str]:
    code = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: "
            "d.version for d in m.distributions()}))")
    return json.loads(subprocess.run([str(py), "-c", code], capture_output=True, text=True,
                                     check=True, timeout=60).stdout)


def fresh(tmp_path, name="t", python=None) -> Path:
    return make_venv(tmp_path / name, python or PY312)


# -- the trap is real ---------------------------------------------------------------------------
@needs312
def test_naive_pip_falls_into_the_trap(idx, tmp_path):
    """What the docs' `pip install --extra-index-url` does with these indexes: the public,
    higher version wins. (Proves the fixture can catch a tool that does the same.)"""
    py = fresh(tmp_path)
    env = pip_env(idx)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--extra-index-url", idx["neuron"], "--extra-index-url", idx["pytorch"],
                    "torch==2.14.0", "torch-neuronx==2.14.3.0.*", "nki"], env=env, check=True,
                   timeout=240, capture_output=True)
    got = dists(py)
    assert got["torch-neuronx"] == "2.14.3.0.99" and got["nki"] == "9.9.9"


# -- the happy path, idempotence, doctor --------------------------------------------------------
@needs312
def test_fresh_venv_right_indexes_then_noop_then_doctor(idx, host_root, tmp_path):
    venv = tmp_path / "new-venv"
    r = install(idx, "--root", str(host_root), "--python", PY312, "--venv", str(venv),
                "--installer", "pip", "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    assert doc["status"] == "installed" and doc["venv_created"] == str(venv)
    py = venv / "bin" / "python"
    got = dists(py)
    assert got["torch"] == "2.14.0+cpu" and got["torch-neuronx"] == "2.14.3.1.1"
    assert got["nki"] == "0.3.0" and got["neuronx-cc"] == "2.22.1.0"
    assert got["libneuronxla"] == "2.2.0"  # a Neuron package pulled in as a dependency
    pk = {p["name"]: p for p in doc["packages"]}
    assert pk["torch-neuronx"]["index"] == "neuron" and pk["torch"]["index"] == "pytorch-cpu"
    assert pk["libneuronxla"]["index"] == "neuron"
    assert pk["filelock"]["origin"] == "dependency"
    assert all(len(p["sha256"]) == 64 for p in doc["packages"])
    assert subprocess.run([str(py), "-c", "import torch_neuronx, nki, libneuronxla"],
                          timeout=60).returncode == 0
    man = json.loads((venv / ".neuron-env/install-manifest.json").read_text())
    jsonschema.validate(man, json.loads((REPO / "neuron_env/schemas/manifest.schema.json")
                                        .read_text()), format_checker=jsonschema.FormatChecker())
    assert man["status"] == "complete" and man["tool"]["name"] == "neuron-env"
    assert {p["name"] for p in man["packages"]} >= {"torch", "torch-neuronx", "nki"}
    log = Path(doc["log"])
    assert log.is_file() and "--report" in log.read_text()
    # progress lines went to stderr, with elapsed time
    assert "s] Resolving torch==2.14.0 from the pytorch-cpu index" in r.stderr

    t0 = time.monotonic()
    again = install(idx, "--root", str(host_root), "--venv", str(venv), "--format", "json")
    took = time.monotonic() - t0
    doc2 = as_json(again)
    assert again.returncode == 0 and doc2["status"] == "unchanged" and doc2["steps"] == []
    assert "nothing to do" in json.dumps(doc2["results"])
    print(f"no-op re-run: {took:.2f}s")

    d = subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root", str(host_root),
                        "--python", str(py), "--only", "backend", "--format", "json"],
                       capture_output=True, text=True, env=cli_env(), timeout=60)
    res = {x["id"]: x for x in json.loads(d.stdout)["results"]}
    assert res["backend.origin"]["status"] == "pass", res["backend.origin"]
    assert res["backend.pairing"]["status"] == "pass"


@needs312
def test_torch_213_into_an_existing_env_replacing_a_placeholder(idx, host_root, tmp_path):
    py = fresh(tmp_path)
    # someone ran plain `pip install torch-neuronx` first: the public placeholder
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "torch-neuronx==1.0"], env=pip_env(idx), check=True,
                   timeout=120, capture_output=True)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--torch", "2.13",
                "--installer", "pip", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    got = dists(py)
    assert got["torch"] == "2.13.0+cpu" and got["torch-neuronx"] == "2.13.3.1.1"


@needs312
def test_env_var_and_flag_override_the_index(idx, host_root, tmp_path):
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--dry-run",
                "--format", "json", "--pytorch-index-url", idx["pytorch"])
    doc = as_json(r)
    by = {i["name"]: i["overridden_by"] for i in doc["plan"]["indexes"]}
    assert by == {"neuron": "NEURON_ENV_NEURON_INDEX_URL", "pytorch-cpu": "--pytorch-index-url"}


# -- the plan and refusals -------------------------------------------------------------------
@needs312
def test_dry_run_prints_the_plan_and_changes_nothing(idx, host_root, tmp_path):
    venv = tmp_path / "not-yet"
    r = install(idx, "--root", str(host_root), "--python", PY312, "--venv", str(venv),
                "--dry-run", "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0 and doc["status"] == "planned" and not venv.exists()
    reqs = [x["requirement"] for x in doc["plan"]["requirements"]]
    assert reqs == ["torch==2.14.0", "torch-neuronx==2.14.3.1.*", "neuronx-cc==2.*", "nki"]
    assert any("--no-deps" in c and "torch-neuronx" in c for c in doc["commands"])
    text = install(idx, "--root", str(host_root), "--python", PY312, "--dry-run")
    assert "dry run: nothing was changed" in text.stdout and "from the neuron index" in text.stdout


@needs312
@pytest.mark.parametrize(("torch", "needle"), [("2.12", "no backend pair for torch 2.12"),
                                               ("banana", "is not a version")])
def test_unknown_torch_is_refused(idx, host_root, torch, needle):
    r = install(idx, "--root", str(host_root), "--python", PY312, "--torch", torch,
                "--format", "json")
    doc = as_json(r)
    assert r.returncode == 2 and needle in doc["error"]["message"]
    assert "2.14" in (doc["error"]["hint"] or "")


def test_python_outside_the_matrix_is_refused_then_forced(idx, host_root, tmp_path):
    py = fresh(tmp_path, python=sys.executable)  # 3.11: Neuron 2.34 wants 3.12-3.14
    r = install(idx, "--root", str(host_root), "--python", str(py))
    assert r.returncode == 2 and "outside Neuron 2.34's range" in r.stderr
    assert "--force" in r.stderr and "torch" not in dists(py)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--force",
                "--installer", "pip", "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    plan = {x["id"]: x for x in doc["results"]}["install.plan"]
    assert plan["status"] == "warn" and plan["summary"].startswith("FORCED")
    assert doc["plan"]["forced"] and dists(py)["torch-neuronx"] == "2.14.3.1.1"


@needs312
def test_unsupported_os_is_refused(idx, tmp_path):
    root = make_root(tmp_path / "jammy", os="ubuntu-22.04", instance="trn2.48xlarge")
    py = fresh(tmp_path)
    r = install(idx, "--root", str(root), "--python", str(py))
    # the sources disagree on 22.04 (supported per the quick start, end-of-support per the
    # release notes): install still refuses it, and says both
    assert r.returncode == 2 and "Ubuntu 22.04" in r.stderr and "end-of-support" in r.stderr
    assert "fix:" in r.stderr


def test_bad_python_is_refused(idx, host_root, tmp_path):
    notpy = tmp_path / "python"
    notpy.write_text("#!/bin/sh\necho hello\n")
    notpy.chmod(0o755)
    r = install(idx, "--root", str(host_root), "--python", str(notpy))
    assert r.returncode == 2 and "cannot install into" in r.stderr
    r = install(idx, "--root", str(host_root), "--python", str(tmp_path / "nope"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    py2 = pyenv_python("2.7")
    if py2:
        r = install(idx, "--root", str(host_root), "--python", py2)
        assert r.returncode == 2 and "Python 3" in r.stderr


# -- provenance --------------------------------------------------------------------------------
@needs312
def test_a_mirror_serving_a_placeholder_is_refused_before_anything_installs(idx, host_root,
                                                                            tmp_path):
    bad = build_index(tmp_path / "bad-mirror", [*NEURON[:3], Stand("nki", "0.0.1"),
                                                NEURON[4]]).as_uri()
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--format", "json",
                env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=bad))
    doc = as_json(r)
    assert r.returncode == 1 and doc["error"]["code"] == "provenance"
    assert "nki 0.0.1 is the public index's PLACEHOLDER" in doc["error"]["message"]
    assert dists(py) == {}


@needs312
def test_a_pin_no_index_satisfies(idx, host_root, tmp_path):
    """The Neuron mirror lacks the 2.14 family; the public index's 2.14.3.1.99 must not do."""
    partial = build_index(tmp_path / "partial", [NEURON[1], *NEURON[2:]]).as_uri()
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py),
                env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=partial))
    assert r.returncode == 2, r.stderr
    assert "no index offers torch-neuronx==2.14.3.1.*" in r.stderr and "fix:" in r.stderr
    assert dists(py) == {}


@needs312
@pytest.mark.parametrize("mode", ["refused", "garbage", "error"])
def test_index_down_or_broken(idx, host_root, tmp_path, mode):
    py = fresh(tmp_path)
    with contextlib.ExitStack() as stack:
        if mode == "refused":
            url = refused_url()
        else:
            url = stack.enter_context(IndexServer(Path(idx["root"]) / "neuron", mode=mode)).url
        r = install(idx, "--root", str(host_root), "--python", str(py), "--format", "json",
                    env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=url))
    doc = as_json(r)
    assert r.returncode == 2, r.stdout + r.stderr
    msg = doc["error"]["message"]
    assert "resolving torch-neuronx" in msg
    if mode == "refused":
        assert "could not be reached" in msg
    assert "log" in doc["error"]["hint"] and dists(py) == {}


@needs312
def test_mirror_credentials_are_used_but_never_written(idx, host_root, tmp_path):
    """An enterprise mirror with basic auth in its URL: pip gets the credentials; no report,
    progress line, log or manifest ever holds them, and doctor still accepts the origin."""
    secret = "s3cr3t-t0ken"
    py = fresh(tmp_path)
    with IndexServer(Path(idx["root"]) / "neuron", auth=("ci", secret)) as mirror:
        url = mirror.url.replace("http://", f"http://ci:{secret}@")
        env = pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=url)
        r = install(idx, "--root", str(host_root), "--python", str(py), "--installer", "pip",
                    "--format", "json", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert any("/simple/torch-neuronx/" in p for p in mirror.requests)
        dry = install(idx, "--root", str(host_root), "--python", str(py), "--dry-run", env=env)
    doc = as_json(r)
    assert "ci:***" not in r.stdout and "***@127.0.0.1" in r.stdout
    man = (py.parent.parent / ".neuron-env/install-manifest.json").read_text()
    for where, text in (("stdout", r.stdout), ("stderr", r.stderr), ("manifest", man),
                        ("log", Path(doc["log"]).read_text()), ("dry-run", dry.stdout)):
        assert secret not in text, f"the mirror's password is in the {where}"
    d = subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root", str(host_root),
                        "--python", str(py), "--only", "backend", "--format", "json"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert secret not in d.stdout + d.stderr
    res = {x["id"]: x for x in json.loads(d.stdout)["results"]}
    assert res["backend.origin"]["status"] == "pass", res["backend.origin"]


@needs312
def test_http_index_works_and_a_slow_one_times_out(idx, host_root, tmp_path):
    py = fresh(tmp_path)
    with IndexServer(Path(idx["root"]) / "neuron") as ok:
        r = install(idx, "--root", str(host_root), "--python", str(py), "--installer", "pip",
                    env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=ok.url))
        assert r.returncode == 0, r.stdout + r.stderr
        assert any("/simple/torch-neuronx/" in p for p in ok.requests)
    py2 = fresh(tmp_path, "slow")
    with IndexServer(Path(idx["root"]) / "neuron", delay=30) as slow:
        r = install(idx, "--root", str(host_root), "--python", str(py2), "--timeout", "4",
                    env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=slow.url))
    assert r.returncode == 4 and "did not finish within 4s" in r.stderr
    assert dists(py2) == {}


# -- failure midway, repair, lock, interrupt, read-only, disk full ----------------------------
@needs312
def test_failure_midway_is_marked_and_a_rerun_repairs_it(idx, host_root, tmp_path):
    broken = build_index(tmp_path / "broken", [*NEURON[:3], Stand("nki", "0.3.0", corrupt=True),
                                               NEURON[4]]).as_uri()
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--installer", "pip",
                env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=broken))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "marked incomplete" in r.stderr and "re-running" in r.stderr
    d = subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root", str(host_root),
                        "--python", str(py), "--only", "backend.origin"], capture_output=True,
                       text=True, env=cli_env(), timeout=60)
    if "torch-neuronx" in dists(py):  # pip left the earlier packages: doctor must say so
        assert d.returncode == 1 and "did not finish" in d.stdout
    r = install(idx, "--root", str(host_root), "--python", str(py), "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0 and doc["status"] == "installed"
    assert dists(py)["nki"] == "0.3.0"
    man = json.loads((Path(py).parent.parent / ".neuron-env/install-manifest.json").read_text())
    assert man["status"] == "complete"


@needs312
def test_a_second_install_waits_for_the_lock(idx, host_root, tmp_path):
    py = fresh(tmp_path)
    state = Path(py).parent.parent / ".neuron-env"
    state.mkdir()
    with open(state / "install.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("4242")
        f.flush()
        r = install(idx, "--root", str(host_root), "--python", str(py), "--lock-timeout", "1")
    assert r.returncode == 4 and "another neuron-env install (pid 4242)" in r.stderr
    assert "waiting for another neuron-env install" in r.stderr and dists(py) == {}


@needs312
def test_ctrl_c_mid_install_leaves_the_env_unharmed(idx, host_root, tmp_path):
    py = fresh(tmp_path)
    with IndexServer(Path(idx["root"]) / "neuron", delay=30) as slow:
        p = subprocess.Popen([sys.executable, "-m", "neuron_env", "install", "--yes", "--root",
                              str(host_root), "--python", str(py)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO,
                             env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=slow.url))
        deadline = time.monotonic() + 60
        while not slow.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        assert slow.requests, "pip never reached the index"
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err and dists(py) == {}
    lock = Path(py).parent.parent / ".neuron-env/install.lock"
    with open(lock) as f:  # released
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _mount(*args) -> bool:
    return subprocess.run(["mount", *args], capture_output=True, timeout=30).returncode == 0


@needs312
def test_a_read_only_environment_is_refused_untouched(idx, host_root, tmp_path):
    py = fresh(tmp_path)
    prefix = Path(py).parent.parent
    if os.geteuid() == 0:
        if not (_mount("--bind", str(prefix), str(prefix)) and
                _mount("-o", "remount,bind,ro", str(prefix))):
            subprocess.run(["umount", str(prefix)], capture_output=True, timeout=30)
            pytest.skip("root without mount rights: cannot make a read-only environment")
        undo = ["umount", str(prefix)]
    else:
        prefix.chmod(0o555)
        undo = ["chmod", "755", str(prefix)]
    try:
        r = install(idx, "--root", str(host_root), "--python", str(py))
    finally:
        subprocess.run(undo, capture_output=True, timeout=30)
    assert r.returncode == 2 and "is not writable" in r.stderr and "--venv DIR" in r.stderr
    assert not (prefix / ".neuron-env").exists()


@needs312
def test_no_space_left_on_device(idx, host_root, tmp_path):
    fs = tmp_path / "tiny"
    fs.mkdir()
    if os.geteuid() != 0 or not _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(fs)):
        pytest.skip("cannot mount a tiny tmpfs here (needs root and mount rights)")
    try:
        py = make_venv(fs / "v", PY312)
        big = build_index(tmp_path / "big", [
            NEURON[0], NEURON[2], NEURON[4],
            Stand("nki", "0.3.0", extra_files={"nki/blob.bin": "x" * (3 * 1024 * 1024)})]).as_uri()
        r = install(idx, "--root", str(host_root), "--python", str(py), "--installer", "pip",
                    "--format", "json", env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=big))
        doc = as_json(r)
        assert r.returncode in (1, 2), r.stdout + r.stderr
        assert "no space left on device" in doc["error"]["message"]
        assert "free disk space" in doc["error"]["hint"]
    finally:
        subprocess.run(["umount", "-l", str(fs)], capture_output=True, timeout=30)


# -- wheelhouse, emulated backend, uv -------------------------------------------------------------
@needs312
def test_offline_from_a_wheelhouse(idx, host_root, tmp_path):
    house = tmp_path / "wheelhouse"
    house.mkdir()
    for name in ("neuron", "pytorch"):
        for w in (Path(idx["root"]) / name / "files").glob("*.whl"):
            (house / w.name).write_bytes(w.read_bytes())
    for w in (Path(idx["root"]) / "public" / "files").glob("filelock-*.whl"):
        (house / w.name).write_bytes(w.read_bytes())
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--offline",
                "--find-links", str(house), "--format", "json",
                env=pip_env(idx, NEURON_ENV_NEURON_INDEX_URL=refused_url(),
                            NEURON_ENV_PYTORCH_INDEX_URL=refused_url(),
                            PIP_INDEX_URL=refused_url()))
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p["origin"] for p in doc["packages"]} == {"wheelhouse"}
    assert dists(py)["torch-neuronx"] == "2.14.3.1.1"
    r = install(idx, "--offline", "--python", str(py), "--root", str(host_root))
    assert r.returncode == 2 and "--offline needs --find-links" in r.stderr


def test_emulated_backend_installs_torch_and_the_bundled_wheel(idx, tmp_path):
    """Rehearsal on any host: this Debian machine, Python 3.11 (both outside the matrix)."""
    py = fresh(tmp_path, python=sys.executable)
    r = install(idx, "--backend", "emulated", "--python", str(py), "--torch", "2.13",
                "--installer", "pip", "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    got = dists(py)
    assert got["torch"] == "2.13.0+cpu" and got["neuron-emulator"] == "0.1.0"
    assert "torch-neuronx" not in got
    pk = {p["name"]: p for p in doc["packages"]}
    assert pk["neuron-emulator"]["origin"] == "bundled" and doc["emulated"] is True
    res = {x["id"]: x for x in doc["results"]}
    assert res["backend.emulator"]["status"] == "warn"
    assert res["install.plan"]["status"] == "warn"  # outside the matrix: said, not refused


def test_a_venv_it_created_is_removed_when_torch_is_unreachable(idx, tmp_path):
    """Python 3.11, --backend emulated, --venv NEW: the plan picks torch 2.14 from an index
    that is down; the wheelhouse holds only 2.13. Exit 2, the new venv removed, and the error
    names the torch versions reachable offline. Then --torch 2.13 installs from the same
    wheelhouse."""
    house = tmp_path / "wheelhouse"
    house.mkdir()
    for w in [*(Path(idx["root"]) / "pytorch" / "files").glob("torch-2.13.0*.whl"),
              *(Path(idx["root"]) / "public" / "files").glob("filelock-*.whl")]:
        (house / w.name).write_bytes(w.read_bytes())
    env = pip_env(idx, NEURON_ENV_PYTORCH_INDEX_URL=refused_url(), PIP_INDEX_URL=refused_url())
    venv = tmp_path / "new-venv"
    args = ("--backend", "emulated", "--python", sys.executable, "--venv", str(venv),
            "--find-links", str(house), "--installer", "pip", "--format", "json")
    r = install(idx, *args, env=env)
    doc = as_json(r)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not venv.exists(), list(venv.iterdir())
    assert "new venv" in doc["error"]["message"] and "was removed" in doc["error"]["message"]
    hint = doc["error"]["hint"]
    assert f"torch reachable offline: 2.13.0+cpu ({house})" in hint and "--torch 2.13" in hint
    # an empty directory the user made is emptied, not removed
    venv.mkdir()
    r = install(idx, *args, env=env)
    assert r.returncode == 2 and venv.is_dir() and not any(venv.iterdir())
    r = install(idx, *args, "--torch", "2.13", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert dists(venv / "bin/python")["torch"] == "2.13.0+cpu"


def test_with_torchvision_installs_the_cpu_build_from_the_pytorch_index(idx, tmp_path):
    """--with torchvision: the build paired with the plan's torch (0.28 for 2.13), from the
    PyTorch index (its +cpu build), never PyPI's higher CUDA 0.28.1; recorded as such."""
    py = fresh(tmp_path, python=sys.executable)
    r = install(idx, "--backend", "emulated", "--python", str(py), "--torch", "2.13",
                "--with", "torchvision", "--installer", "pip", "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    assert dists(py)["torchvision"] == "0.28.0+cpu"
    assert {"name": "torchvision", "requirement": "torchvision==0.28.*",
            "index": "pytorch-cpu", "source": "index"} in doc["plan"]["requirements"]
    pk = {p["name"]: p for p in doc["packages"]}
    assert pk["torchvision"]["index"] == "pytorch-cpu", pk["torchvision"]
    assert pk["torchvision"]["index_url"] == idx["pytorch"]
    r = install(idx, "--backend", "emulated", "--python", str(py), "--torch", "2.13",
                "--with", "timm", "--format", "json")
    assert r.returncode == 2 and "no timm pairing" in as_json(r)["error"]["message"]


@needs312
def test_with_torchao_neuron_takes_the_neuron_build_hash_pinned(idx, host_root, tmp_path):
    """--with torchao-neuron (Neuron 2.34, Trn3): the Neuron index's 0.18.0+neuron.1, never the
    public index's 0.18.0 under the same name; hash-pinned and recorded like torch-neuronx; the
    plan says Trn3 only. Against 2.33 (no TorchAO Neuron) it is refused."""
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--with", "torchao-neuron",
                "--installer", "pip", "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    got = dists(py)
    assert got["torchao-neuron"] == TORCHAO_NEURON and got["torch-neuronx"] == "2.14.3.1.1"
    assert {"name": "torchao-neuron", "requirement": "torchao-neuron==0.18.0",
            "index": "neuron", "source": "index"} in doc["plan"]["requirements"]
    assert any("trn3, trn3p, trn3e instances only" in w for w in doc["plan"]["warnings"])
    pk = {p["name"]: p for p in doc["packages"]}
    assert pk["torchao-neuron"]["index"] == "neuron" and len(pk["torchao-neuron"]["sha256"]) == 64
    assert subprocess.run([str(py), "-c", "import torchao; print(torchao.__version__)"],
                          capture_output=True, text=True, timeout=60).stdout.strip() == \
        TORCHAO_NEURON
    r = install(idx, "--root", str(host_root), "--python", str(py), "--matrix", "2.33",
                "--with", "torchao-neuron", "--format", "json")
    assert r.returncode == 2 and "no torchao-neuron pairing" in as_json(r)["error"]["message"]


def test_emulated_keeps_the_real_torch_already_there(idx, torch_python):
    r = install(idx, "--backend", "emulated", "--python", torch_python, "--dry-run",
                "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0 and doc["plan"]["keep"] == ["torch 2.13.0+cpu"]


@needs312
def test_uv_installs_the_same_plan(idx, host_root, tmp_path):
    from neuron_env.install.installers import find_uv

    if find_uv() is None:
        pytest.skip("uv is not installed (pip install uv): only pip was exercised")
    py = fresh(tmp_path)
    r = install(idx, "--root", str(host_root), "--python", str(py), "--installer", "uv",
                "--format", "json")
    doc = as_json(r)
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(s["name"] == "install (uv)" for s in doc["steps"])
    got = dists(py)
    assert got["torch-neuronx"] == "2.14.3.1.1" and got["nki"] == "0.3.0"
    # uv compiled the bytecode (as pip does): the installed packages have __pycache__
    site = Path(py).parent.parent / "lib"
    for pkg in ("torch", "torch_neuronx"):
        found = list(site.glob(f"python3*/site-packages/{pkg}/__pycache__/*.pyc"))
        assert found, f"no bytecode for {pkg} after a uv install"


def test_uv_install_command_compiles_bytecode(tmp_path):
    """The exact uv command install runs leaves __pycache__ behind (as pip does): without it
    the first `import torch` compiles everything, and every import does under
    PYTHONDONTWRITEBYTECODE=1."""
    from neuron_env.guards import proc
    from neuron_env.install import installers
    from tests.helpers.envs import site_packages
    from tests.helpers.wheels import Stand, build_wheel

    uv = installers.find_uv()
    if uv is None:
        pytest.skip("uv is not installed (pip install uv)")
    whl = build_wheel(tmp_path / "w", Stand("tiny-mod", "1.0", body="X = 1\n"))
    lock = tmp_path / "lock.txt"
    lock.write_text(f"tiny-mod @ {whl.as_uri()}\n")
    py = make_venv(tmp_path / "v")
    inst = installers.Installer("uv", (str(py), "-m", "pip"), uv)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", UV_NO_CACHE="1")
    r = proc.run(installers.install_cmd(inst, str(py), str(lock), hashes=False), timeout=120,
                 env=env)
    assert r.ok, r.stdout + r.stderr
    assert list((site_packages(py) / "tiny_mod" / "__pycache__").glob("*.pyc"))
