"""The checks of the Neuron stack around the backend: versions, cores, lineage, collectives,
tools, containers, caches, EFA. Pure: facts built in memory, passing and failing."""

from __future__ import annotations

import pytest

from neuron_env import checks
from neuron_env.commands.doctor import neuronx_releases
from neuron_env.matrix import catalog
from neuron_env.probes.container import ContainerFacts
from neuron_env.probes.efa import EfaFacts
from neuron_env.probes.holders import Holder
from neuron_env.probes.neuron_ls import NeuronLsFacts
from neuron_env.util.record import replace
from tests.helpers.facts import APT, APT_232, GIB, GOOD, cache_dir, host, target, tools_on_path

M = catalog.select("2.33")
CTX = checks.Context(python_flag="/venv/bin/python")


def one(id_, facts, m=M):
    """As doctor runs it: with the known releases that pair an unpaired torch-neuronx."""
    ctx = replace(CTX, neuronx_releases=neuronx_releases(facts, m))
    return checks.run_checks(facts, m, ctx, [id_])[0]


def nls(devices=16, nc=4, lnc=2, procs=None):
    return NeuronLsFacts("/opt/aws/neuron/bin/neuron-ls", tuple(
        {"neuron_device": i, "nc_count": nc, "logical_neuroncore_config": lnc,
         "neuron_processes": (procs or {}).get(i, [])} for i in range(devices)))


# -- driver.versions ----------------------------------------------------------------------------
def test_versions_in_step_with_the_release_pass():
    r = one("driver.versions", host())
    assert r.status == "pass" and "Neuron 2.33" in r.summary
    assert r.expected["aws-neuronx-collectives"] == "2.35.43.0"


def test_legacy_non_x_packages_fail_with_the_removal_command():
    r = one("driver.versions", host(apt={**APT, "aws-neuron-dkms": "2.3.26.0"}))
    assert r.status == "fail" and "aws-neuron-dkms" in r.summary
    assert r.fix.startswith("sudo apt-get remove -y --purge aws-neuron-dkms && ")
    assert "aws-neuronx-dkms=2.31.7.0*" in r.fix


@pytest.mark.parametrize("apt, module, words", [
    ({**APT, "aws-neuronx-collectives": "2.34.10.0"}, "2.31.7.0", "different releases"),
    ({**APT, "aws-neuronx-dkms": "2.30.2.0"}, "2.30.2.0", "needs aws-neuronx-dkms 2.31.7.0"),
    (APT, "2.30.2.0", "the loaded neuron module is 2.30.2.0"),
])
def test_stack_out_of_step_fails(apt, module, words):
    r = one("driver.versions", host(apt=apt, module=module))
    assert r.status == "fail" and any(words in p for p in r.details["problems"]), r.details
    assert "aws-neuronx-runtime-lib=2.35.30.0*" in r.fix


def test_previous_release_set_warns_because_233_pins_are_unconfirmed():
    r = one("driver.versions", host(apt=APT_232, module="2.30.2.0"))
    assert r.status == "warn" and "not confirmed as apt pins" in r.summary
    assert r.docs.startswith("https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/")


def test_versions_skip_without_dpkg_or_packages():
    assert one("driver.versions", host(dpkg=False)).status == "skip"
    assert one("driver.versions", host(apt={})).status == "skip"


# -- driver.cores -------------------------------------------------------------------------------
def test_cores_default_lnc_and_neuron_ls_agree():
    r = one("driver.cores", host(neuron_ls=nls()))
    assert r.status == "pass" and "64 logical NeuronCores at LNC=2" in r.summary
    r = one("driver.cores", host(env={"NEURON_LOGICAL_NC_CONFIG": "1"}))
    assert r.status == "pass" and r.expected == 128


def test_trn2n_counts_like_trn2():
    r = one("driver.cores", host(instance="trn2n.48xlarge"))
    assert r.status == "pass" and r.expected == 64


@pytest.mark.parametrize("env, words", [
    ({"NEURON_LOGICAL_NC_CONFIG": "8"}, "LNC=8 is not"),
    ({"NEURON_RT_VISIBLE_CORES": "60-70"}, "asks for core 70"),
    ({"NEURON_RT_VISIBLE_CORES": "three"}, "not a core list"),
])
def test_cores_bad_settings_fail(env, words):
    r = one("driver.cores", host(env=env))
    assert r.status == "fail" and words in r.summary and r.fix


def test_stale_holder_fails_with_pid_and_command():
    dead = Holder(4242, "python train.py", (0, 1), "2.35", alive=False)
    r = one("driver.cores", host(neuron_ls=nls(), holders=(dead,)))
    assert r.status == "fail" and "pid 4242 (python train.py)" in r.summary
    assert "modprobe" in r.fix
    zombie = Holder(77, "torchrun", (3,), alive=True, zombie=True, ppid=70)
    r = one("driver.cores", host(holders=(zombie,)))
    assert r.status == "fail" and "zombie" in r.summary and "kill -9 70" in r.fix


def test_live_holder_warns_and_count_mismatch_warns():
    busy = Holder(9, "python serve.py", (0,), alive=True)
    r = one("driver.cores", host(holders=(busy,)))
    assert r.status == "warn" and "pid 9 (python serve.py)" in r.summary
    r = one("driver.cores", host(neuron_ls=nls(devices=15)))
    assert r.status == "warn" and "neuron-ls shows 60" in r.summary


def test_cores_skip_when_not_visible():
    assert one("driver.cores", host(assumed=True, source="flag")).status == "skip"
    assert one("driver.cores", host(instance="m5.large", devices=0)).status == "skip"


# -- backend.lineage, backend.collectives -------------------------------------------------------
def test_native_backend_alone_passes_lineage():
    assert one("backend.lineage", host()).status == "pass"


def test_xla_torch_neuronx_where_native_is_expected_fails_with_exact_fix():
    tgt = target({**GOOD, "torch": "2.9.0", "torch-neuronx": "2.9.0.2.15.32035",
                  "torch-xla": "2.9.0", "libneuronxla": "2.2.14584.0"})
    r = one("backend.lineage", host(tgt=tgt))
    assert r.status == "fail" and "XLA-based library (torch 2.9.0" in r.summary
    assert r.fix.startswith("/venv/bin/python -m pip uninstall -y libneuronxla torch-neuronx "
                            "torch-xla && neuron-env install")
    assert len(r.details["problems"]) == 3


def test_torch_xla_beside_native_fails():
    r = one("backend.lineage", host(tgt=target({**GOOD, "torch-xla": "2.9.0"})))
    assert r.status == "fail" and "torch-xla 2.9.0 is installed beside" in r.summary
    assert "uninstall -y torch-xla &&" in r.fix


def test_libneuronxla_alone_beside_native_is_not_a_leftover():
    r = one("backend.lineage", host(tgt=target({**GOOD, "libneuronxla": "2.2.0"})))
    assert r.status == "pass"
    r = one("backend.lineage", host(tgt=target({**GOOD, "libneuronxla": "2.2.0",
                                                "torch-xla": "2.9.0"})))
    assert r.status == "fail" and "uninstall -y libneuronxla torch-xla &&" in r.fix


def test_native_backend_against_an_xla_matrix_fails():
    r = one("backend.lineage", host(), m=catalog.select("2.31.1"))
    assert r.status == "fail" and "--matrix 2.33" in r.fix


@pytest.mark.parametrize("apt, status, words", [
    ({k: v for k, v in APT.items() if k != "aws-neuronx-collectives"}, "fail", "not installed"),
    ({**APT, "aws-neuronx-collectives": "2.34.10.0"}, "fail", "does not match"),
    (APT_232, "warn", "Neuron 2.33 ships 2.35.43.0"),
    (APT, "pass", "aws-neuronx-collectives 2.35.43.0"),
])
def test_collectives_package(apt, status, words):
    r = one("backend.collectives", host(apt=apt))
    assert r.status == status and words in r.summary


# -- tools.path ---------------------------------------------------------------------------------
def test_tools_on_path_pass():
    assert one("tools.path", host()).status == "pass"


def test_tools_in_opt_but_not_on_path_warn_with_export():
    """Where aws-neuronx-tools installs them, but not on PATH: a health check's environment
    (slurmd, node-problem-detector) reads no /etc/profile.d. The node is fine: a warning (#44)."""
    r = one("tools.path", host(tools=tools_on_path(**{"neuron-ls": None, "neuron-top": None})))
    assert r.status == "warn" and "not on this PATH" in r.summary
    assert "/opt/aws/neuron/bin" in r.summary
    assert r.fix.startswith("export PATH=/opt/aws/neuron/bin:$PATH")


def test_tools_missing_and_neuronx_cc_only_in_the_venv():
    t = tools_on_path(**{"neuron-ls": None, "neuron-top": None})
    t.in_neuron_bin.update({"neuron-ls": False, "neuron-top": False})
    r = one("tools.path", host(tools=t))
    assert r.status == "fail" and "aws-neuronx-tools installed but incomplete" in r.summary
    r = one("tools.path", host(tools=tools_on_path(**{"neuronx-cc": None})))
    assert r.status == "warn" and "in the target venv" in r.summary


# -- container.devices --------------------------------------------------------------------------
DOCKER = ContainerFacts(True, "docker", ("/.dockerenv",))
K8S = ContainerFacts(True, "kubernetes", ("/var/run/secrets/kubernetes.io/serviceaccount",))


def test_container_checks_apply_only_inside_one():
    assert one("container.devices", host()).status == "skip"
    r = one("container.devices", host(container=DOCKER, devices=4))
    assert r.status == "pass" and "4 Neuron device node(s)" in r.summary


def test_container_without_devices_says_how_to_add_them():
    r = one("container.devices", host(container=DOCKER, devices=0))
    assert r.status == "fail" and "--device=/dev/neuron0" in r.fix
    r = one("container.devices", host(container=K8S, devices=0))
    assert r.status == "fail" and "aws.amazon.com/neuron" in r.fix


def test_visible_devices_without_the_hook_fail_naming_the_missing_nodes():
    r = one("container.devices", host(container=DOCKER, devices=2,
                                      env={"AWS_NEURON_VISIBLE_DEVICES": "0-3"}))
    assert r.status == "fail" and "/dev/neuron2, /dev/neuron3" in r.summary
    assert "--device=/dev/neuron2 --device=/dev/neuron3" in r.fix


def test_visible_cores_beyond_the_devices_passed_in_fail():
    r = one("container.devices", host(container=DOCKER, devices=1,
                                      env={"NEURON_RT_VISIBLE_CORES": "0-7"}))
    assert r.status == "fail" and "needs 2 device(s)" in r.summary


# -- cache.compile ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, words", [
    (dict(writable=False), "is not writable"),
    (dict(exists=False, is_dir=False, writable=False, creatable_from="/"), "cannot be created"),
    (dict(free_bytes=GIB // 2), "0.5 GiB free"),
    (dict(is_dir=False), "is a file"),
])
def test_cache_problems_fail(kw, words):
    r = one("cache.compile", host(cache=(cache_dir(**kw),)))
    assert r.status == "fail" and words in r.summary and r.fix


def test_cache_stale_compiler_versions_warn_and_healthy_passes():
    assert one("cache.compile", host()).status == "pass"
    stale = cache_dir(compiler_versions=("2.15.141.0", GOOD["neuronx-cc"]))
    r = one("cache.compile", host(cache=(stale,)))
    assert r.status == "warn" and "neuronx-cc 2.15.141.0" in r.summary
    assert "/tmp/neuron_backend/neuronxcc-2.15.141.0*" in r.summary


# -- net.efa ------------------------------------------------------------------------------------
def test_efa_present_passes_and_types_without_efa_facts_skip():
    assert one("net.efa", host()).status == "pass"
    assert one("net.efa", host(instance="trn2.3xlarge", devices=1)).status == "skip"


EXPECT = checks.Context(python_flag="/venv/bin/python", expect_efa=True)


@pytest.mark.parametrize("efa, container, words", [
    (EfaFacts(("rdmap0s0",), ()), None, "no /dev/infiniband/uverbs"),
    (EfaFacts(("rdmap0s0",), ("uverbs0",), "/opt/amazon/efa/bin/fi_info", 0), None,
     "no efa provider"),
])
def test_efa_problems_fail_with_a_multi_node_intent(efa, container, words):
    r = checks.run_checks(host(efa=efa, container=container), M, EXPECT, ["net.efa"])[0]
    assert r.status == "fail" and words in r.summary and r.fix


@pytest.mark.parametrize("efa, container", [(EfaFacts(), None), (EfaFacts(("rdmap0s0",), ()),
                                                                 DOCKER)])
def test_no_efa_on_a_single_node_host_warns_and_says_when_it_matters(efa, container):
    r = one("net.efa", host(efa=efa, container=container))
    assert r.status == "warn" and "EFA matters only across nodes" in r.summary
    assert "--expect-efa" in r.summary and r.fix and r.observed["multi_node"] is None


@pytest.mark.parametrize("env, intent", [
    ({"SLURM_JOB_NUM_NODES": "2"}, "SLURM_JOB_NUM_NODES=2"),
    ({"SLURM_NNODES": "8"}, "SLURM_NNODES=8"),
    ({"SLURM_JOB_NUM_NODES": "1"}, None),
    ({"SLURM_JOB_NUM_NODES": "x"}, None),
])
def test_a_slurm_job_on_several_nodes_is_a_multi_node_intent(env, intent):
    r = one("net.efa", host(efa=EfaFacts(), env=env))
    assert r.observed["multi_node"] == intent
    assert r.status == ("fail" if intent else "warn")


def test_broken_efa_fails_even_without_intent():
    """EFA devices without uverbs nodes: the host was launched with EFA, so it is a fault."""
    assert one("net.efa", host(efa=EfaFacts(("rdmap0s0",), ()))).status == "fail"


# -- os.release: the Ubuntu 22.04 disagreement ---------------------------------------------------
def test_ubuntu_2204_shows_both_sources_not_a_flat_failure():
    r = one("os.release", host(os_version="22.04"))
    assert r.status == "warn"
    for words in ("sources disagree", "supported (no prebuilt wheels, build from source, no new "
                  "DLAMIs)", "end-of-support per"):
        assert words in r.summary, r.summary
    assert set(r.details["sources"]) == {"supported", "end-of-support"}
    assert r.docs == "https://github.com/aws-neuron/torch-neuronx/releases/tag/v2.33.0"


@pytest.mark.parametrize("why", ["owned by uid 1001, not by this user (uid 0) or root",
                                 "writable by group or others (mode 777)"])
def test_an_untrusted_compile_cache_warns(why):
    """guards.trust for the compile cache (issue #36): another user's NEFFs would run here."""
    c = cache_dir(var="TORCH_NEURONX_NEFF_CACHE_DIR", path="/var/tmp/neuron-compile-cache",
                  untrusted=why)
    r = one("cache.compile", host(cache=(c,)))
    assert r.status == "warn" and why in r.summary and "export TORCH_NEURONX_NEFF_CACHE_DIR" \
        in (r.fix or "")
