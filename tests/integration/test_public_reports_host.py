"""Public reports of broken Neuron hosts, each rebuilt as a --root fixture and judged by doctor
with the release of the report's date: the root-cause check, its status, and a fix that matches
the one the thread says worked. Reports older than Neuron 2.3.0 (the oldest bundled release,
October 2022) run against 2.3.0. Reports doctor cannot diagnose are listed, with the reason, in
docs/doctor.md ("What doctor cannot see"), not here."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import hostparts as hp
from tests.helpers import roots
from tests.helpers.cli import cli_env, run_cli

pytestmark = pytest.mark.integration

UBUNTU = {
    "18.04": 'NAME="Ubuntu"\nVERSION_ID="18.04"\nVERSION_CODENAME=bionic\nID=ubuntu\n'
             'ID_LIKE=debian\nPRETTY_NAME="Ubuntu 18.04.6 LTS"\n',
    "20.04": 'NAME="Ubuntu"\nVERSION_ID="20.04"\nVERSION_CODENAME=focal\nID=ubuntu\n'
             'ID_LIKE=debian\nPRETTY_NAME="Ubuntu 20.04.6 LTS"\n',
}
AL2 = ('NAME="Amazon Linux"\nVERSION="2"\nID="amzn"\nID_LIKE="centos rhel fedora"\n'
       'VERSION_ID="2"\nPRETTY_NAME="Amazon Linux 2"\n')
OK = "install ok installed"
HALF = "install ok half-configured"


@dataclass
class Report:
    url: str
    date: str  # of the report
    release: str  # the bundled release of that date (2.3.0 for older reports)
    build: Callable[[Path], Path]  # the user's environment, as a --root fixture
    check: str  # the root cause's check id
    status: str
    fix: tuple[str, ...]  # all in the fix line (the thread's fix that worked)
    env: dict | None = None  # the environment doctor ran in (container variables)
    summary: str = ""  # in the summary, when the class must be named as such
    python: Callable[[Path], Path] | None = None  # the target interpreter, when it matters
    not_in_fix: tuple[str, ...] = ()  # never in the fix line (a wrong fix)


def _dpkg(root: Path, packages: dict[str, tuple[str, str]]) -> Path:
    hp.set_dpkg(root, packages)
    return root


# -- the fixtures -----------------------------------------------------------------------------
def r655(base: Path) -> Path:
    """Inf1 DLAMI (Ubuntu 18.04) with the legacy aws-neuron-dkms under a 2.x runtime: 'This
    Neuron Runtime (compatibility id: 6) is not compatible with the installed aws-neuron-dkms'."""
    root = roots.make_root(base, os_release_text=UBUNTU["18.04"], instance="inf1.6xlarge",
                           devices=4, driver="2.2.14.0")
    return _dpkg(root, {"aws-neuron-dkms": ("2.2.14.0", OK),
                        "aws-neuronx-runtime-lib": ("2.12.16.0-8e42c5019", OK)})


def r661(base: Path) -> Path:
    """A Docker image build (Ubuntu 18.04) whose `apt-get install aws-neuron-dkms=2.2.14.0`
    failed its postinst: the driver inside the image, left half-configured."""
    root = roots.make_root(base, os_release_text=UBUNTU["18.04"], instance="inf1.xlarge",
                           devices=1)
    roots.make_container(root)
    return _dpkg(root, {"aws-neuron-dkms": ("2.2.14.0", HALF)})


def r945(base: Path) -> Path:
    """Ubuntu 22.04 inf1.xlarge, kernel 6.5.0-1024-aws: the legacy aws-neuron-dkms upgraded to
    2.3.26.0 failed to build and stayed half-configured ('1 not fully installed')."""
    root = roots.make_root(base, os="ubuntu-22.04", instance="inf1.xlarge", devices=0)
    hp.add_kernel(root, "6.5.0-1024-aws")
    hp.add_dkms(root, "2.3.26.0", {"6.5.0-1024-aws": False}, module="aws-neuron")
    return _dpkg(root, {"aws-neuron-dkms": ("2.3.26.0", HALF)})


def r415(base: Path) -> Path:
    """An EKS pod on inf1.xlarge (Amazon Linux 2 image): 'Unable to read compatible Driver
    version ... ensure Neuron Devices are passed to the container'; no /dev/neuron* inside."""
    root = roots.make_root(base, os_release_text=AL2, instance="inf1.xlarge", devices=0)
    return roots.make_container(root, "kubernetes")


def r482(base: Path) -> Path:
    """inf1.2xlarge on a DLAMI without the Neuron driver: `docker run --device=/dev/neuron0`
    fails with 'no such file or directory' because the host has no /dev/neuron0."""
    root = roots.make_root(base, os_release_text=UBUNTU["20.04"], instance="inf1.2xlarge",
                           devices=0)
    return _dpkg(root, {})


def r_dlc2094(base: Path) -> Path:
    """An Ubuntu 18.04 image run with `-e AWS_NEURON_VISIBLE_DEVICES=0` and no --device (no OCI
    hook on the host): the variable alone passes no device."""
    root = roots.make_root(base, os_release_text=UBUNTU["18.04"], instance="inf1.xlarge",
                           devices=0)
    return roots.make_container(root)


def r713(base: Path) -> Path:
    """trn1.32xlarge, torchrun --nproc_per_node=32: 'CCOM WARN Call to accept failed : Too many
    open files' under the default open-file limit of 1024."""
    root = roots.make_root(base, os_release_text=UBUNTU["20.04"], instance="trn1.32xlarge",
                           devices=16, driver="2.11.9.0", cores=2)
    hp.set_limits(root, nofile=("1024", "1048576"), memlock=("unlimited", "unlimited"))
    roots.add_efa(root, ib=8, uverbs=8)
    return _dpkg(root, {"aws-neuronx-dkms": ("2.11.9.0", OK)})


def r447(base: Path) -> Path:
    """Inf1 Ubuntu host with the tools installed in /opt/aws/neuron/bin but not on PATH:
    'neuron-ls: command not found'."""
    root = roots.make_root(base, os_release_text=UBUNTU["20.04"], instance="inf1.2xlarge",
                           devices=1, driver="2.5.41.0")
    roots.add_neuron_tools(root, on_path=False, tools=("neuron-ls", "neuron-top"))
    return _dpkg(root, {"aws-neuronx-dkms": ("2.5.41.0", OK),
                        "aws-neuronx-tools": ("2.5.19.0", OK)})


def r1017(base: Path) -> Path:
    """The legacy aws-neuron-tools kept an old aws-neuronx-runtime-lib 2.7 in place: 'undefined
    symbol: nrt_tensor_copy, version NRT_2.0.0'."""
    root = roots.make_root(base, os="ubuntu-22.04", instance="trn1.2xlarge", devices=1,
                           driver="2.18.12.0", cores=2)
    return _dpkg(root, {"aws-neuronx-dkms": ("2.18.12.0", OK),
                        "aws-neuron-tools": ("2.1.4.0", OK),
                        "aws-neuronx-runtime-lib": ("2.7.4.0-1cc1f5a33", OK)})


def r353(base: Path) -> Path:
    """An Ubuntu 20.04 container where `apt install aws-neuron-dkms` skipped its build ('It is
    likely that 5.4.0-1057-aws belongs to a chroot's host')."""
    root = roots.make_root(base, os_release_text=UBUNTU["20.04"], instance="inf1.xlarge",
                           devices=1)
    roots.make_container(root)
    hp.add_dkms(root, "2.2.6.0", module="aws-neuron")
    return _dpkg(root, {"aws-neuron-dkms": ("2.2.6.0", OK)})


def r466(base: Path) -> Path:
    """An arm64 machine where pip falls back to the placeholder torch-neuron 1.0."""
    return roots.make_root(base, os_release_text=UBUNTU["20.04"], instance=None, arch=0xB7)


def r_driver3(base: Path) -> Path:
    """The ECS-optimized Amazon Linux 2 Inferentia AMI: aws-neuron-dkms 2.2.6.0 installed, no
    /dev/neuron0: DKMS had not built the module for the running kernel; a reinstall fixed it.
    Its rpm database is Berkeley DB (no rpm program here to read it)."""
    root = roots.make_root(base, os_release_text=AL2, instance="inf1.xlarge", devices=0)
    kernel = "4.14.252-195.483.amzn2.x86_64"
    hp.add_kernel(root, kernel, rpm=True)
    hp.add_dkms(root, "2.2.6.0", module="aws-neuron")
    (root / "var/lib/rpm").mkdir(parents=True)
    (root / "var/lib/rpm/Packages").write_bytes(b"\0" * 4096)
    return root


def r_efa_memlock(base: Path) -> Path:
    """An EFA job aborting with 'Libfabric error: (-12) Cannot allocate memory' under a
    locked-memory limit of 64 KiB."""
    root = roots.make_root(base, os="ubuntu-22.04", instance="trn1.32xlarge", devices=16,
                           driver="2.19.64.0", cores=2)
    roots.add_efa(root, ib=8, uverbs=8)
    hp.set_limits(root, nofile=("1048576", "1048576"), memlock=("65536", "65536"))
    return _dpkg(root, {"aws-neuronx-dkms": ("2.19.64.0", OK)})


def r_optimum698(base: Path) -> Path:
    """A TGI Neuron image whose neuronx-cc runs starfish/bin/walrus_driver: 'error while loading
    shared libraries: libxml2.so.2: cannot open shared object file'. The compiler is installed
    in the doctor's target (see `with_compiler`); the image lacks libxml2."""
    root = roots.make_root(base, os="ubuntu-22.04", instance="inf2.48xlarge", devices=12,
                           driver="2.18.12.0", cores=2)
    roots.make_container(root)
    hp.add_system_libs(root, ["libc.so.6", "libstdc++.so.6", "libm.so.6"])
    return root


def r452(base: Path) -> Path:
    """inf1.xlarge on a GPU TensorFlow DLAMI (Ubuntu 20.04) without Neuron's apt repository:
    'E: Unable to locate package aws-neuron-dkms'; adding the repository and its key fixed it."""
    root = roots.make_root(base, os_release_text=UBUNTU["20.04"], instance="inf1.xlarge",
                           devices=0)
    return _dpkg(root, {})


def r_pr736(base: Path) -> Path:
    """A PyTorch DLAMI (Ubuntu 20.04) trn1.32xlarge whose Neuron packages the AMI put on hold,
    a release behind: the update guide's `apt-get install -y` stops with 'Held packages were
    changed and -y was used without --allow-change-held-packages'."""
    root = roots.make_root(base, os_release_text=UBUNTU["20.04"], instance="trn1.32xlarge",
                           devices=16, driver="2.11.9.0", cores=2)
    hold = "hold ok installed"
    return _dpkg(root, {"aws-neuronx-dkms": ("2.11.9.0", hold),
                        "aws-neuronx-runtime-lib": ("2.15.14.0-279f319f2", hold),
                        "aws-neuronx-collectives": ("2.15.16.0-db4e2d9a9", hold),
                        "aws-neuronx-tools": ("2.12.2.0", hold)})


def r617(base: Path) -> Path:
    """inf1 under ECS on a custom AMI built, by a typo, from the GPU-optimised ECS AMI (Amazon
    Linux 2) instead of the Inferentia one: no Neuron driver on the host, no /dev/neuron*; moving
    to the ECS Inferentia AMI (which ships the driver) fixed it."""
    root = roots.make_root(base, os_release_text=AL2, instance="inf1.xlarge", devices=0)
    hp.add_kernel(root, "5.10.157-139.675.amzn2.x86_64")
    return root


def with_compiler(python: Path) -> Path:
    """neuronx-cc 2.15 in the target, with an ELF program that needs libxml2.so.2."""
    from tests.helpers.envs import add_dist, site_packages

    site = site_packages(python)
    add_dist(site, "neuronx-cc", "2.15.128.0")
    bin_dir = site / "neuronxcc/starfish/bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "walrus_driver").write_bytes(hp.elf_so(["libxml2.so.2", "libstdc++.so.6",
                                                       "libm.so.6", "libc.so.6"]))
    return python


REPORTS = [
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/655", "2023-04-21", "2.9.1",
           r655, "driver.module", "fail",
           ("remove -y --purge aws-neuron-dkms", "aws-neuronx-dkms"), summary="aws-neuron-dkms"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/661", "2023-04-28", "2.10.0",
           r661, "container.driver", "fail", ("remove -y --purge aws-neuron-dkms",),
           summary="half-configured"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/945", "2024-08-14", "2.19.1",
           r945, "driver.states", "fail",
           ("remove -y --purge aws-neuron-dkms", "aws-neuronx-dkms=2.17.17.0*"),
           summary="half-configured"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/415", "2022-04-02", "2.3.0",
           r415, "container.devices", "fail", ("aws.amazon.com/neuron",)),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/482", "2022-08-26", "2.3.0",
           r482, "driver.module", "fail", ("aws-neuronx-dkms", "linux-headers-$(uname -r)"),
           summary="not installed"),
    Report("https://github.com/aws/deep-learning-containers/issues/2094", "2022-07-22", "2.3.0",
           r_dlc2094, "container.devices", "fail", ("--device=/dev/neuron0",),
           env={"AWS_NEURON_VISIBLE_DEVICES": "0"}, summary="OCI hook"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/713", "2023-08-01", "2.12.0",
           r713, "os.limits", "warn", ("ulimit -n 65535",), summary="open files 1024"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/447", "2022-07-15", "2.3.0",
           # a warning since #44: the tools are installed, only this shell's PATH lacks them
           r447, "tools.path", "warn", ("export PATH=/opt/aws/neuron/bin:$PATH",)),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/1017", "2024-10-18", "2.20.0",
           r1017, "driver.versions", "fail",
           ("remove -y --purge aws-neuron-tools", "aws-neuronx-tools=",
            "aws-neuronx-runtime-lib=2.22.14.0*"), summary="legacy",
           # the trn1/inf2 runtime of 2.20.0, never the Inf1 row (2.12.23.0) the manifest lists
           # first
           not_in_fix=("2.12.23.0",)),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/353", "2021-11-04", "2.3.0",
           r353, "container.driver", "warn", ("remove -y --purge aws-neuron-dkms",),
           summary="belongs on the host"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/466", "2022-08-12", "2.3.0",
           r466, "os.arch", "fail", ("x86_64",), summary="aarch64"),
    Report("https://github.com/aws-neuron/aws-neuron-driver/issues/3", "2021-11-12", "2.3.0",
           r_driver3, "driver.dkms", "fail", ("yum reinstall -y aws-neuron-dkms",),
           summary="4.14.252-195.483.amzn2.x86_64"),
    Report("https://github.com/awslabs/awsome-distributed-ai/issues/647", "2025-04-19",
           "2.22.0", r_efa_memlock, "os.limits", "warn", ("ulimit -l unlimited",),
           summary="locked memory"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/452", "2022-07-21", "2.3.0",
           r452, "driver.module", "fail",
           ("/etc/apt/sources.list.d/neuron.list", "https://apt.repos.neuron.amazonaws.com focal",
            "GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB", "aws-neuronx-dkms"), summary="not installed"),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/pull/736", "2023-09-08", "2.13.0",
           r_pr736, "driver.versions", "fail",
           ("sudo apt-get install -y --allow-change-held-packages", "aws-neuronx-dkms=")),
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/617", "2022-12-15", "2.6.0",
           r617, "driver.module", "fail", ("yum install -y", "kernel-devel-", "aws-neuronx-dkms"),
           summary="not installed"),
    Report("https://github.com/huggingface/optimum-neuron/issues/698", "2024-09-20", "2.20.0",
           r_optimum698, "os.libs", "fail", ("apt-file search",), summary="libxml2.so.2",
           python=with_compiler),
]


@pytest.fixture(scope="module")
def doctor_python(tmp_path_factory):
    from tests.helpers.envs import make_venv

    return make_venv(tmp_path_factory.mktemp("py") / "v")


def doctor(root: Path, release: str, python: Path, env: dict | None = None) -> dict:
    out = run_cli("doctor", "--root", str(root), "--matrix", release, "--python", str(python),
                  "--format", "json", env=cli_env(**(env or {})))
    assert out.stdout, out.stderr
    return {r["id"]: r for r in json.loads(out.stdout)["results"]}


@pytest.mark.parametrize("rep", REPORTS, ids=[r.url.split("github.com/")[1] for r in REPORTS])
def test_public_report(rep: Report, tmp_path, doctor_python):
    from tests.helpers.envs import make_venv

    python = rep.python(make_venv(tmp_path / "v")) if rep.python else doctor_python
    res = doctor(rep.build(tmp_path / "root"), rep.release, python, rep.env)
    r = res[rep.check]
    assert r["status"] == rep.status, (rep.url, r["summary"])
    assert rep.summary in r["summary"], (rep.url, r["summary"])
    fix = r.get("fix_command") or r["fix"] or ""
    for part in rep.fix:
        assert part in fix, (rep.url, part, fix)
    for part in rep.not_in_fix:
        assert part not in fix, (rep.url, part, fix)


def test_the_corpus_is_dated_and_cited():
    assert len(REPORTS) >= 13
    assert len({r.url for r in REPORTS}) == len(REPORTS)
    for r in REPORTS:
        assert r.url.startswith("https://github.com/") and len(r.date) == 10


def test_an_al2_rpm_database_that_cannot_be_read_is_said(tmp_path, doctor_python):
    """The Amazon Linux 2 host of aws-neuron-driver#3: its Berkeley DB is named as unread."""
    res = doctor(r_driver3(tmp_path / "root"), "2.3.0", doctor_python,
                 {"PATH": "/usr/bin:/bin"} if not Path("/usr/bin/rpm").exists() else None)
    r = res["driver.states"]
    assert r["status"] == "warn" and "not read" in r["summary"], r
    # no "missing packages" from a database that was not read; the DKMS tree still tells
    assert res["driver.packages"]["status"] == "skip"
    assert "Berkeley DB" in res["driver.packages"]["summary"]
    assert "aws-neuron-dkms 2.2.6.0" in res["driver.module"]["summary"]
    assert not any("apt-get" in (x.get("fix_command") or x.get("fix") or "")
                   for x in res.values()), "an apt line on an rpm host"
