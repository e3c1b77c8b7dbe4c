"""Pure: the rpm header parser, dpkg states, /proc limits, and the checks driver.states,
driver.dkms, container.driver, os.limits, os.libs on facts built in memory."""

from __future__ import annotations

import pytest

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.probes.container import ContainerFacts
from neuron_env.probes.elfneeds import LibFacts
from neuron_env.probes.host import OSFacts, parse_dpkg_states, parse_dpkg_status
from neuron_env.probes.kernel import DkmsBuild, KernelFacts
from neuron_env.probes.limits import UNLIMITED, LimitFacts, parse_limits_conf
from neuron_env.probes.rpmdb import RpmFacts, _HeaderError, parse_header
from neuron_env.util.record import replace
from tests.helpers.facts import host
from tests.helpers.hostparts import dpkg_stanzas, rpm_header

M = catalog.select("2.33")
CTX = checks.Context(python_flag="/venv/bin/python")
K = "6.8.0-1015-aws"


def run(facts, cid, m=M):
    return checks.run_checks(facts, m, CTX, [cid])[0]


def test_rpm_header_blobs_parse_and_bad_ones_raise():
    h = parse_header(rpm_header("aws-neuronx-dkms", "2.19.64.0", "dkms", epoch=1))
    assert (h[1000], h[1001], h[1002], h[1003]) == ("aws-neuronx-dkms", "2.19.64.0", "dkms", 1)
    blob = rpm_header("x", "1")
    for bad in (b"", blob[:20], b"\xff\xff\xff\xff" + blob[4:],
                blob[:32] + b"\x7f\xff\xff\xff" + blob[36:]):  # NAME's offset
        with pytest.raises(_HeaderError):
            parse_header(bad)


def test_dpkg_states_are_read_and_installed_ones_are_not_states():
    text = dpkg_stanzas({"aws-neuronx-dkms": ("2.18.12.0", "install ok half-configured"),
                         "aws-neuronx-tools": ("2.19.0.0", "install reinstreq half-installed"),
                         "aws-neuronx-collectives": ("2.22.26.0", "install ok unpacked"),
                         "aws-neuronx-runtime-lib": ("2.22.14.0", "install ok installed")})
    assert parse_dpkg_states(text) == {"aws-neuronx-dkms": "half-configured",
                                       "aws-neuronx-tools": "reinstreq",
                                       "aws-neuronx-collectives": "unpacked"}
    assert parse_dpkg_status(text) == {"aws-neuronx-runtime-lib": "2.22.14.0"}


def test_limits_conf_is_read_for_everyone_only():
    vals: dict = {}
    parse_limits_conf("@users soft nofile 10\nalice - nofile 20\n* soft memlock 64\n"
                      "*  -  nofile  unlimited\n", vals)
    assert vals == {"memlock_soft": 65536, "nofile_soft": UNLIMITED, "nofile_hard": UNLIMITED}


def _kernel(**kw):
    return KernelFacts(running=K, source="uname -r", installed=(K,), **kw)


def test_dkms_built_but_not_installed_gets_dkms_install():
    f = replace(host(module=None), kernel=_kernel(
        with_headers=(K,), dkms=(DkmsBuild("aws-neuronx", "2.31.7.0", K, True),)))
    r = run(f, "driver.dkms")
    assert r.status == "fail" and r.fix_command == (
        f"sudo dkms install aws-neuronx/2.31.7.0 -k {K} && sudo modprobe neuron")


def test_dkms_without_headers_installs_them_for_the_running_kernel():
    f = replace(host(module=None), kernel=_kernel(dkms=(DkmsBuild("aws-neuronx", "2.31.7.0",
                                                                  None, False),)))
    r = run(f, "driver.dkms")
    assert r.status == "fail" and "headers are not installed" in r.summary
    assert r.fix_command == ('sudo apt-get install -y "linux-headers-$(uname -r)" && '
                             "sudo dpkg-reconfigure aws-neuronx-dkms")


def test_a_loaded_module_passes_dkms_and_a_container_skips_it():
    assert run(replace(host(), kernel=_kernel()), "driver.dkms").status == "pass"
    f = replace(host(container=ContainerFacts(True, "docker", ("/.dockerenv",))),
                kernel=_kernel())
    assert run(f, "driver.dkms").status == "skip"


def test_rpm_duplicates_on_al2_get_yum():
    f = host(os_id="amzn", os_version="2", dpkg=False, apt={})
    f = replace(f, os=OSFacts("amzn", "2", None, "Amazon Linux 2"), driver=replace(
        f.driver, rpm=RpmFacts(True, "rpm --root", {"aws-neuronx-dkms": ("2.1-dkms",
                                                                         "2.2-dkms")})))
    r = run(f, "driver.states")
    assert r.status == "fail" and "yum transaction" in r.summary
    assert r.fix_command.startswith("sudo yum install -y yum-utils && sudo package-cleanup")
    assert "apt" not in r.fix_command


def test_driver_inside_a_container_warns_and_fails_when_half_done():
    c = ContainerFacts(True, "docker", ("/.dockerenv",))
    assert run(host(container=c), "container.driver").status == "warn"
    f = host(container=c, apt={})
    f = replace(f, driver=replace(f.driver, states={"aws-neuronx-dkms": "half-configured"},
                                  versions={"aws-neuronx-dkms": "2.31.7.0"}))
    r = run(f, "container.driver")
    assert r.status == "fail" and r.fix_command == "sudo apt-get remove -y --purge " \
                                                   "aws-neuronx-dkms"


def test_limits_count_the_visible_cores_as_ranks():
    lim = LimitFacts(1024, 4096, UNLIMITED, UNLIMITED, "this process")
    f = replace(host(env={"NEURON_RT_VISIBLE_CORES": "0-7"}), limits=lim)
    assert run(f, "os.limits").status == "pass"  # 8 ranks x 64 = 512 <= 1024
    f = replace(host(env={"NEURON_RT_VISIBLE_CORES": "0-31"}), limits=lim)
    r = run(f, "os.limits")
    assert r.status == "warn" and "2048 that 32 ranks need" in r.summary
    low = replace(host(), limits=LimitFacts(1 << 20, 1 << 20, 65536, 65536, "this process"))
    r = run(low, "os.limits")
    assert r.status == "warn" and "ulimit -l unlimited" in r.fix


def test_missing_libraries_name_the_os_search():
    f = replace(host(), libs=LibFacts("neuronx-cc", files=4, missing={
        "libxml2.so.2": ("walrus_driver",)}))
    r = run(f, "os.libs")
    assert r.status == "fail" and "apt-file search libxml2.so.2" in r.fix


def test_held_packages_get_allow_change_held_packages():
    from neuron_env.probes.host import parse_dpkg_holds

    text = dpkg_stanzas({"aws-neuronx-dkms": ("2.11.9.0", "hold ok installed"),
                         "aws-neuronx-tools": ("2.12.2.0", "install ok installed")})
    assert parse_dpkg_holds(text) == ("aws-neuronx-dkms",)
    f = host(apt={"aws-neuronx-dkms": "2.11.9.0"}, module="2.11.9.0")
    f = replace(f, driver=replace(f.driver, held=("aws-neuronx-dkms",)))
    r = run(f, "driver.module")
    assert r.status == "warn" and "install -y --allow-change-held-packages" in r.fix_command
    assert "--allow-change-held" not in (run(host(apt={"aws-neuronx-dkms": "2.11.9.0"},
                                                  module="2.11.9.0"), "driver.module")
                                         .fix_command or "")
