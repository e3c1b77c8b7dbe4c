"""The host-state probes against fixture roots and real files: the rpm database (sqlite header
blobs), dpkg states, DKMS trees per kernel, /proc limits and limits.conf, ELF DT_NEEDED; and the
fix lines they lead to (dnf/yum on rpm hosts, never apt)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_env.probes import elfneeds, kernel, limits, rpmdb
from neuron_env.probes.host import make_root
from tests.helpers import hostparts as hp
from tests.helpers import roots
from tests.helpers.cli import cli_env, run_cli
from tests.helpers.envs import add_dist, make_venv, site_packages

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def py(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("py") / "v")


def doctor(root: Path, release: str, python: Path) -> dict:
    out = run_cli("doctor", "--root", str(root), "--matrix", release, "--python", str(python),
                  "--format", "json", env=cli_env())
    assert out.stdout, out.stderr
    return {r["id"]: r for r in json.loads(out.stdout)["results"]}


def al2023(base: Path, packages) -> Path:
    root = roots.make_root(base, os="amzn-2023", instance="trn1.32xlarge", devices=16,
                           cores=2)
    hp.add_rpmdb(root, packages)
    return root


# -- rpm ------------------------------------------------------------------------------------------
def test_the_sqlite_rpm_database_is_read_by_its_header_blobs(tmp_path):
    root = al2023(tmp_path, [("aws-neuronx-dkms", "2.19.64.0-dkms"),
                             ("aws-neuronx-runtime-lib", "2.22.14.0_6e27b8d5b-1")])
    got = rpmdb.probe_rpm(make_root(str(root)))
    assert got.present and got.source == rpmdb.SQLITE and got.problem is None
    assert got.packages == {"aws-neuronx-dkms": ("2.19.64.0-dkms",),
                            "aws-neuronx-runtime-lib": ("2.22.14.0_6e27b8d5b-1",)}


def test_a_damaged_blob_is_counted_not_raised(tmp_path):
    bad = (b"\0\0\xff\xff\0\0\0\x10", hp.rpm_header("aws-neuronx-tools", "2.20.0.0")[:40])
    root = al2023(tmp_path, {"aws-neuronx-dkms": "2.19.64.0-dkms"})
    hp.add_rpmdb(tmp_path / "other", {}, extra_blobs=bad)
    shutil.copy(tmp_path / "other/var/lib/rpm/rpmdb.sqlite", root / "var/lib/rpm/rpmdb.sqlite")
    got = rpmdb.probe_rpm(make_root(str(root)))
    assert got.packages == {} and got.problem == "2 entries were not rpm headers"


def test_a_file_that_is_not_sqlite_is_said(tmp_path):
    root = roots.make_root(tmp_path, os="amzn-2023")
    (root / "var/lib/rpm").mkdir(parents=True)
    (root / "var/lib/rpm/rpmdb.sqlite").write_bytes(b"not a database" * 100)
    got = rpmdb.probe_rpm(make_root(str(root)))
    assert got.present and "could not be read as an rpm database" in got.problem


def test_a_berkeley_db_without_rpm_says_what_was_not_read(tmp_path):
    root = roots.make_root(tmp_path, os="amzn-2023")
    (root / "var/lib/rpm").mkdir(parents=True)
    (root / "var/lib/rpm/Packages").write_bytes(b"\0" * 64)
    got = rpmdb.probe_rpm(make_root(str(root)), look_for_rpm=False)
    assert got.present and "Berkeley DB" in got.problem and "not read" in got.problem


def test_an_rpm_host_gets_dnf_lines_and_no_apt_line(tmp_path, py):
    """AL2023 with the legacy aws-neuron-dkms and a yum transaction left half (two versions of
    aws-neuronx-dkms): os.release does not fail (AWS's manifest lists AL2023 without saying
    per release: a warning), and every fix is dnf from Neuron's yum repository."""
    root = al2023(tmp_path, [("aws-neuron-dkms", "2.3.26.0-dkms"),
                             ("aws-neuronx-dkms", "2.18.12.0-dkms"),
                             ("aws-neuronx-dkms", "2.17.17.0-dkms")])
    res = doctor(root, "2.20.0", py)
    assert res["os.release"]["status"] == "warn", res["os.release"]
    assert "without saying whether Neuron 2.20.0 supports it" in res["os.release"]["summary"]
    assert res["driver.module"]["status"] == "fail"
    assert res["driver.module"]["fix_command"].startswith("sudo dnf remove -y aws-neuron-dkms")
    states = res["driver.states"]
    assert states["status"] == "fail" and "2.17.17.0-dkms" in states["summary"]
    assert states["fix_command"].startswith("sudo dnf remove --duplicates -y")
    fixes = [r.get("fix_command") or r.get("fix") or "" for r in res.values()]
    assert not any("apt-get" in f or "Ubuntu" in f for f in fixes), fixes
    assert any("yum.repos.neuron.amazonaws.com" in f for f in fixes)


def test_an_al2_host_gets_yum(tmp_path, py):
    root = roots.make_root(tmp_path, os_release_text='NAME="Amazon Linux"\nVERSION="2"\n'
                           'ID="amzn"\nVERSION_ID="2"\nPRETTY_NAME="Amazon Linux 2"\n',
                           instance="trn1.2xlarge", devices=1, cores=2)
    hp.add_rpmdb(root, [("aws-neuronx-runtime-lib", "2.22.14.0_6e27b8d5b-1")])
    res = doctor(root, "2.20.0", py)
    fix = res["driver.packages"]["fix_command"]
    assert "sudo yum install -y" in fix and "kernel-devel-" in fix and "apt" not in fix


# -- dpkg states, DKMS ----------------------------------------------------------------------------
def test_a_half_configured_driver_is_named_not_missing(tmp_path, py):
    root = roots.make_root(tmp_path, os="ubuntu-22.04", instance="trn1.2xlarge", devices=0)
    hp.set_dpkg(root, {"aws-neuronx-dkms": ("2.18.12.0", "install ok half-configured"),
                       "aws-neuronx-tools": ("2.19.0.0", "install reinstreq half-installed")})
    hp.add_kernel(root, "6.8.0-1015-aws", headers=False)
    res = doctor(root, "2.20.0", py)
    mod = res["driver.module"]
    assert mod["status"] == "fail" and "half-configured" in mod["summary"]
    assert "not installed" not in mod["summary"]
    st = res["driver.states"]
    assert st["status"] == "fail"
    assert 'linux-headers-6.8.0-1015-aws" && sudo dpkg --configure -a' in st["fix_command"]
    assert "sudo apt-get install --reinstall -y aws-neuronx-tools" in st["fix_command"]
    assert "half-configured" in res["driver.packages"]["summary"]
    dk = res["driver.dkms"]
    assert dk["status"] == "fail" and "headers are not installed" in dk["summary"]


def test_dkms_built_for_another_kernel_only(tmp_path):
    root = roots.make_root(tmp_path, os="ubuntu-22.04")
    hp.add_kernel(root, "6.5.0-1024-aws", running=False, module=True)
    hp.add_kernel(root, "6.8.0-1015-aws")  # the running one: headers, no module
    hp.add_dkms(root, "2.18.12.0", {"6.5.0-1024-aws": True, "6.8.0-1015-aws": False})
    k = kernel.probe_kernel(make_root(str(root)))
    assert k.running == "6.8.0-1015-aws" and k.source.startswith("proc/sys/kernel/osrelease")
    assert k.with_module == ("6.5.0-1024-aws",)
    assert set(k.with_headers) == {"6.5.0-1024-aws", "6.8.0-1015-aws"}
    assert {(b.kernel, b.built) for b in k.dkms} == {("6.5.0-1024-aws", True),
                                                    ("6.8.0-1015-aws", False)}


def test_the_only_kernel_of_an_image_is_its_running_one(tmp_path):
    root = roots.make_root(tmp_path, os="ubuntu-22.04", live=False)
    hp.add_kernel(root, "6.8.0-1015-aws", running=False)
    k = kernel.probe_kernel(make_root(str(root)))
    assert k.running == "6.8.0-1015-aws" and k.source == "the only kernel under lib/modules"


# -- limits ---------------------------------------------------------------------------------------
def test_proc_limits_and_limits_conf(tmp_path):
    assert limits.parse_proc_limits(hp.set_limits(tmp_path, ("1024", "4096"),
                                                  ("unlimited", "unlimited")).read_text()) == {
        "nofile": (1024, 4096), "memlock": (-1, -1)}
    root = roots.make_root(tmp_path / "r")
    (root / "etc/security/limits.d").mkdir(parents=True)
    (root / "etc/security/limits.conf").write_text("*  soft nofile 4096\nroot - nofile 9\n")
    (root / "etc/security/limits.d/90-efa.conf").write_text("* - memlock unlimited\n"
                                                            "* hard nofile 65535  # raised\n")
    got = limits.probe_limits(make_root(str(root)))
    assert (got.nofile_soft, got.nofile_hard, got.memlock_soft) == (4096, 65535, -1)


def test_this_process_limits_are_read(tmp_path):
    import resource

    got = limits.probe_limits(make_root(None))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert got.nofile_soft == (soft if soft != resource.RLIM_INFINITY else -1)


# -- ELF needs ------------------------------------------------------------------------------------
def test_the_elf_reader_agrees_with_readelf_on_real_libraries():
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf (binutils) here")
    libs = [p for p in map(Path, (sys.executable, "/usr/lib/x86_64-linux-gnu/libssl.so.3",
                                  "/usr/lib/x86_64-linux-gnu/libz.so.1",
                                  "/lib/x86_64-linux-gnu/libm.so.6")) if p.exists()]
    assert libs
    for lib in libs:
        out = subprocess.run([readelf, "-dW", str(lib)], capture_output=True, text=True,
                             timeout=30).stdout
        want = [ln.split("[", 1)[1].rstrip("]") for ln in out.splitlines() if "(NEEDED)" in ln]
        assert list(elfneeds.read_needs(lib).needed) == want, lib


def test_the_compilers_missing_library_is_named(tmp_path, py):
    site = site_packages(py)
    add_dist(site, "neuronx-cc", "2.15.128.0")
    pkg = site / "neuronxcc/starfish"
    pkg.mkdir(parents=True)
    (pkg / "penguin.cpython-311-x86_64-linux-gnu.so").write_bytes(
        hp.elf_so(["libgomp.so.1", "libc.so.6", "libneuronxcc_rt.so"],
                  runpath="$ORIGIN/../../neuronx_cc.libs"))
    (site / "neuronx_cc.libs").mkdir()
    (site / "neuronx_cc.libs/libneuronxcc_rt.so").write_bytes(hp.elf_so(["libstdc++.so.6"]))
    root = roots.make_root(tmp_path / "r", os="ubuntu-22.04", instance="trn1.2xlarge")
    hp.add_system_libs(root, ["libc.so.6"])
    res = doctor(root, "2.20.0", py)
    r = res["os.libs"]
    assert r["status"] == "fail" and "libgomp.so.1" in r["summary"], r
    assert "libneuronxcc_rt.so" not in r["summary"]  # found through RUNPATH ($ORIGIN)
    hp.add_system_libs(root, ["libgomp.so.1"])
    assert doctor(root, "2.20.0", py)["os.libs"]["status"] == "pass"


def test_a_berkeley_db_is_read_through_rpm_when_there_is_one(tmp_path):
    """Amazon Linux 2: `rpm --root ROOT --dbpath /var/lib/rpm -qa --qf …` (a stand-in rpm that
    answers as rpm does; Debian's rpm is not installed here)."""
    root = roots.make_root(tmp_path / "r", os="amzn-2023")
    (root / "var/lib/rpm").mkdir(parents=True)
    (root / "var/lib/rpm/Packages").write_bytes(b"\0" * 64)
    rpm = roots.add_executable(tmp_path / "bin/rpm", (
        f'[ "$1 $2 $3 $4" = "--root {root} --dbpath /var/lib/rpm" ] || exit 3\n'
        "printf 'aws-neuronx-dkms\\t2.19.64.0-dkms\\naws-neuronx-tools\\t2.20.204.0-1\\n'\n"))
    got = rpmdb.probe_rpm(make_root(str(root)), rpm=str(rpm))
    assert got.source == "rpm --root" and got.problem is None
    assert got.packages == {"aws-neuronx-dkms": ("2.19.64.0-dkms",),
                            "aws-neuronx-tools": ("2.20.204.0-1",)}
    broken = roots.add_executable(tmp_path / "bin2/rpm", "exit 2\n")
    got = rpmdb.probe_rpm(make_root(str(root)), rpm=str(broken))
    assert got.packages == {} and "could not read" in got.problem
