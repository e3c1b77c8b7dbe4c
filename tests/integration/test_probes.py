"""Probes against real files, a real IMDS on loopback, real interpreters, a fake neuron-ls."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from neuron_env.probes import imds
from neuron_env.probes.host import (
    make_root,
    parse_dpkg_status,
    parse_os_release,
    probe_arch,
    probe_driver,
    probe_os,
)
from neuron_env.probes.instance import probe_instance
from neuron_env.probes.interpreter import probe_target
from neuron_env.probes.neuron_ls import probe_neuron_ls
from tests.helpers import roots
from tests.helpers.envs import PLACEHOLDER_INIT, add_dist, pyenv_python
from tests.helpers.servers import IMDS

pytestmark = pytest.mark.integration


# -- os-release -------------------------------------------------------------------------------
def test_os_release_real_files(tmp_path):
    for name, (osid, ver) in {"ubuntu-24.04": ("ubuntu", "24.04"), "amzn-2023": ("amzn", "2023"),
                              "debian-12": ("debian", "12")}.items():
        r = roots.make_root(tmp_path / name, os=name, vendor=None)
        f = probe_os(make_root(str(r)))
        assert (f.id, f.version_id) == (osid, ver) and f.error is None


def test_os_release_odd_quoting():
    kv = parse_os_release("ID='ubuntu'\nVERSION_ID=\"24.04\"\nPRETTY_NAME=\"Ubuntu \\\"24\\\"\"\n"
                          "  # comment\nNAME=\"unterminated\nBAD LINE\nVERSION_CODENAME=noble  \n")
    assert kv["ID"] == "ubuntu" and kv["VERSION_ID"] == "24.04"
    assert kv["PRETTY_NAME"] == 'Ubuntu "24"' and kv["NAME"] == "unterminated"
    assert kv["VERSION_CODENAME"] == "noble"


def test_os_release_missing_empty_and_fallback(tmp_path):
    (tmp_path / "a/etc").mkdir(parents=True)
    assert "no os-release" in probe_os(make_root(str(tmp_path / "a"))).error
    (tmp_path / "a/etc/os-release").write_text("")
    assert "no ID=" in probe_os(make_root(str(tmp_path / "a"))).error
    (tmp_path / "b/usr/lib").mkdir(parents=True)
    (tmp_path / "b/usr/lib/os-release").write_text(roots.OS_RELEASE["ubuntu-26.04"])
    assert probe_os(make_root(str(tmp_path / "b"))).version_id == "26.04"


def test_arch_from_the_image_elf(tmp_path):
    r = roots.make_root(tmp_path / "arm", arch=0xB7)
    assert probe_arch(make_root(str(r)))[0] == "aarch64"
    r = roots.make_root(tmp_path / "x86")
    assert probe_arch(make_root(str(r))) == ("x86_64", "ELF usr/bin/env")
    assert probe_arch(make_root(str(tmp_path / "empty")))[0] is None


def test_driver_and_dpkg(tmp_path):
    r = roots.trn2_host(tmp_path / "h")
    d = probe_driver(make_root(str(r)))
    assert d.module_version == "2.31.7.0" and len(d.device_nodes) == 16
    assert d.device_nodes[:3] == ("neuron0", "neuron1", "neuron2")
    assert d.sysfs_devices[0].core_count == 8 and d.sysfs_devices[0].device_name == "Trainium2"
    assert d.packages["aws-neuronx-tools"] == "2.33.38.0"
    text = ("Package: aws-neuronx-dkms\nStatus: deinstall ok config-files\nVersion: 2.1\n\n"
            "Package: aws-neuronx-tools\nStatus: install ok installed\nVersion: 2.32.28.0\n")
    assert parse_dpkg_status(text) == {"aws-neuronx-tools": "2.32.28.0"}


# -- instance: DMI, then IMDS with its faults ---------------------------------------------------
def test_dmi_wins_and_non_ec2_skips_imds(tmp_path, monkeypatch):
    r = roots.trn2_host(tmp_path / "h", instance="trn2u.48xlarge")
    f = probe_instance(make_root(str(r)), None)
    assert (f.type, f.source, f.instance_id) == ("trn2u.48xlarge", "dmi", "i-0123456789abcdef0")
    laptop = roots.make_root(tmp_path / "l", vendor="LENOVO", instance="20XW")
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    t0 = time.monotonic()
    f = probe_instance(make_root(str(laptop)), None)
    assert f.type is None and f.is_ec2 is False and "IMDS not asked" in f.notes[0]
    assert time.monotonic() - t0 < 0.2


def test_flag_wins_over_everything(tmp_path):
    r = roots.trn2_host(tmp_path / "h")
    f = probe_instance(make_root(str(r)), "TRN3.48xlarge")
    assert (f.type, f.source, f.assumed) == ("trn3.48xlarge", "flag", True)


@pytest.fixture
def no_dmi_root(tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    return make_root(str(roots.make_root(tmp_path / "c", vendor=None)))


def test_imdsv2_token_then_get(no_dmi_root, monkeypatch):
    with IMDS() as srv:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.url)
        f = probe_instance(no_dmi_root, None)
        assert (f.type, f.source) == ("trn2.48xlarge", "imds")
        assert "RUNNING host" in " ".join(f.notes)  # under --root, IMDS is not the image
        put, get = srv.requests[0], srv.requests[1]
        assert put[0] == "PUT" and put[2]["X-aws-ec2-metadata-token-ttl-seconds"] == "21600"
        assert get[2]["X-aws-ec2-metadata-token"] == "AQAEAtoken=="


@pytest.mark.parametrize("mode, words", [
    ("404", "HTTP 404"), ("garbage", "not valid"), ("huge", "over 4096 bytes"),
    ("hang", "timed out"), ("crlf-token", "token is not valid"),
])
def test_imds_faults_are_bounded(no_dmi_root, monkeypatch, mode, words):
    with IMDS(mode) as srv:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.url)
        t0 = time.monotonic()
        f = probe_instance(no_dmi_root, None)
        took = time.monotonic() - t0
    assert f.type is None and words in " ".join(f.notes), f.notes
    assert took < 1.5


def test_imds_v1_only_and_slow(no_dmi_root, monkeypatch):
    with IMDS("v1only") as srv:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.url)
        f = probe_instance(no_dmi_root, None)
        assert f.type == "trn2.48xlarge" and "IMDSv1" in " ".join(f.notes)
    with IMDS(delay=0.3) as srv:  # slow but inside the budget
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.url)
        assert probe_instance(no_dmi_root, None).type == "trn2.48xlarge"
    with IMDS(delay=3) as srv:  # slower than the budget
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.url)
        t0 = time.monotonic()
        assert probe_instance(no_dmi_root, None).type is None
        assert time.monotonic() - t0 < 1.5


def test_imds_refused_and_disabled(no_dmi_root, monkeypatch):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{port}/")
    f = probe_instance(no_dmi_root, None)
    assert f.type is None and "ConnectionRefused" in " ".join(f.notes)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert "disabled" in " ".join(probe_instance(no_dmi_root, None).notes)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "false")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "ftp://nope")
    assert "bad IMDS endpoint" in " ".join(probe_instance(no_dmi_root, None).notes)
    assert imds.endpoint() == "ftp://nope"


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/", "http://127.0.0.1:abc/",
                                 "http://[::1/"])
def test_imds_bad_endpoint_url_is_a_note_not_a_crash(no_dmi_root, monkeypatch, url):
    """Whatever the endpoint is, a fault asking IMDS means only that the type comes from
    elsewhere (an out-of-range port raised ValueError through doctor: exit 3)."""
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url)
    f = probe_instance(no_dmi_root, None)
    assert f.type is None and "IMDS" in " ".join(f.notes), f.notes


# -- the target interpreter ----------------------------------------------------------------------
def test_target_facts_from_a_real_venv(venv_factory):
    py, site = venv_factory()
    add_dist(site, "torch", "2.13.0+cpu")
    add_dist(site, "torch-neuronx", "1.0", files={"torch_neuronx/__init__.py": PLACEHOLDER_INIT})
    add_dist(site, "nki", "0.7.0",
             direct_url={"url": "file:///w/nki-0.7.0.whl", "archive_info": {}})
    (site / "broken-0.1.dist-info").mkdir()
    (site / "broken-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\n")
    t = probe_target(str(py))
    assert t.usable and t.venv is True and t.version == ".".join(map(str, sys.version_info[:3]))
    assert t.dist("torch").version == "2.13.0+cpu"
    assert t.dist("torch_neuronx").wrong_package_marker is True
    assert t.dist("nki").direct_url["url"].endswith(".whl")
    assert any("broken-0.1.dist-info" in b for b in t.broken)
    assert t.dist("torch").location.endswith("torch-2.13.0+cpu.dist-info")


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_other_target_pythons(venv_factory, version):
    exe = pyenv_python(version)
    if exe is None:
        pytest.skip(f"Python {version} is not installed here (pyenv)")
    py, site = venv_factory(exe)
    add_dist(site, "torch", "2.14.0")
    t = probe_target(str(py))
    assert t.version.startswith(version + ".") and t.dist("torch").version == "2.14.0"


def _script(path: Path, body: str) -> str:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_bad_interpreters(tmp_path):
    from neuron_env.errors import InterpreterError

    with pytest.raises(InterpreterError, match="does not exist"):
        probe_target(str(tmp_path / "nope" / "python"))
    f = tmp_path / "noexec"
    f.write_text("")
    with pytest.raises(InterpreterError, match="not executable"):
        probe_target(str(f))
    with pytest.raises(InterpreterError, match="is a directory"):
        probe_target(str(tmp_path))
    garbage = _script(tmp_path / "garbage", "#!/bin/sh\necho 'hello there'\n")
    assert "printed no probe result" in probe_target(garbage).error
    crash = _script(tmp_path / "crash", "#!/bin/sh\nkill -SEGV $$\n")
    assert "crashed (signal 11)" in probe_target(crash).error
    failing = _script(tmp_path / "fail", "#!/bin/sh\necho 'Fatal Python error' >&2\nexit 7\n")
    assert "exit 7" in probe_target(failing).error


def test_python2_target():
    py2 = pyenv_python("2.7")
    if py2 is None:
        pytest.skip("Python 2.7 is not installed here (pyenv)")
    t = probe_target(py2)
    assert not t.usable and "Python 2.7" in t.error


def test_stdout_noise_does_not_confuse_the_probe(venv_factory):
    py, site = venv_factory()
    (site / "noisy.pth").write_text("import sys; sys.stdout.write('{\"not\": \"it\"}\\n')\n")
    t = probe_target(str(py))
    assert t.usable


# -- neuron-ls -----------------------------------------------------------------------------------
NEURON_LS_OK = """[{"neuron_device": 0, "bdf": "cc:00.0", "cpu_affinity": "0-47", "numa_node": "0",
"connected_to": [1, 3], "nc_count": 8, "logical_neuroncore_config": 2,
"memory_size": 103079215104, "neuroncore_ids": [0, 1, 2, 3], "neuron_processes": []}]"""


@pytest.mark.parametrize("body, words", [
    (f"cat <<'EOF'\n{NEURON_LS_OK}\nEOF\n", None),
    ("echo 'Failed to discover neuron devices' >&2; exit 1\n", "exited 1"),
    ("echo '[{broken'\n", "malformed JSON"),
    ("echo '{\"a\": 1}'\n", "not a list"),
    ("sleep 60\n", "hung"),
])
def test_neuron_ls(tmp_path, monkeypatch, body, words):
    _script(tmp_path / "neuron-ls", "#!/bin/sh\n" + body)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("neuron_env.probes.neuron_ls.TIMEOUT", 1.0)
    t0 = time.monotonic()
    f = probe_neuron_ls()
    assert time.monotonic() - t0 < 3
    if words is None:
        assert f.error is None and f.devices[0]["nc_count"] == 8
    else:
        assert words in f.error and f.devices is None


@pytest.mark.parametrize("refusal", [
    "echo 'neuron-ls: error: unrecognized arguments: -j' >&2; exit 2",
    "echo 'Error: unknown shorthand flag: j in -j' >&2; exit 1",
])
def test_neuron_ls_234_output_format_json(tmp_path, monkeypatch, refusal):
    """Neuron 2.34's neuron-ls refuses -j and speaks --output-format json: both work, and which
    one answered is recorded."""
    body = (f'if [ "$1" = "-j" ]; then {refusal}; fi\n'
            f'[ "$1 $2" = "--output-format json" ] || exit 9\ncat <<\'EOF\'\n{NEURON_LS_OK}\nEOF\n')
    _script(tmp_path / "neuron-ls", "#!/bin/sh\n" + body)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    f = probe_neuron_ls()
    assert f.error is None and f.devices[0]["nc_count"] == 8
    assert f.args == "--output-format json"
    _script(tmp_path / "neuron-ls", f"#!/bin/sh\ncat <<'EOF'\n{NEURON_LS_OK}\nEOF\n")
    assert probe_neuron_ls().args == "-j"


def test_neuron_ls_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("neuron_env.probes.neuron_ls.FALLBACK", str(tmp_path / "none"))
    assert "not found" in probe_neuron_ls().error


def test_probe_scanner_agrees_with_importlib_metadata(venv_factory):
    """The probe reads dist-info by hand for speed; it must see what importlib.metadata sees."""
    import json as _json
    import subprocess

    py, site = venv_factory()
    add_dist(site, "torch", "2.13.0+cpu")
    add_dist(site, "Foo.Bar_baz", "1.2.3")
    egg = site / "legacy.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy\nVersion: 0.9\n\nbody\n")
    code = ("import json, importlib.metadata as m\nprint(json.dumps(sorted((d.metadata['Name'], "
            "d.version) for d in m.distributions())))")
    want = _json.loads(subprocess.run([str(py), "-c", code], capture_output=True, text=True,
                                      check=True, timeout=30).stdout)
    t = probe_target(str(py))
    got = sorted((d.name, d.version) for d in t.dists.values())
    assert got == sorted(map(tuple, want))
