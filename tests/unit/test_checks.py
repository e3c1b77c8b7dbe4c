"""Pure checks: facts + matrix -> results, one behaviour per test."""

from __future__ import annotations

import pytest

from neuron_env import checks
from neuron_env.commands.doctor import neuronx_releases
from neuron_env.errors import UsageError
from neuron_env.matrix import catalog
from neuron_env.probes.neuron_ls import NeuronLsFacts
from neuron_env.report.model import Result, exit_code
from neuron_env.util.record import replace
from tests.helpers.facts import GOOD, host, target

M = catalog.select("2.33")
CTX = checks.Context(python_flag="/venv/bin/python")


def run(facts, ctx=CTX, only=(), m=M):
    """As doctor runs them: with the known releases that pair an unpaired torch-neuronx."""
    ids = checks.select(list(only), [])
    ctx = replace(ctx, neuronx_releases=neuronx_releases(facts, m))
    return {r.id: r for r in checks.run_checks(facts, m, ctx, ids)}


def test_healthy_trn2_host_passes_everything():
    res = run(host())
    assert res.pop("container.devices").status == "skip"  # not in a container
    assert res.pop("backend.companions").status == "skip"  # no torchvision & co.
    assert res.pop("backend.stack").status == "skip"  # a native matrix lists no [[stack]]
    assert res.pop("backend.pins").status == "skip"  # no package here declares a numpy range
    for skipped in ("os.limits", "os.libs", "driver.dkms", "container.driver", "container.hook"):
        assert res.pop(skipped).status == "skip"  # no limits, kernel, neuronx-cc facts here
    assert {r.status for r in res.values()} == {"pass"}, {
        k: (r.status, r.summary) for k, r in res.items() if r.status != "pass"}
    assert exit_code(list(res.values())) == 0
    assert [*res, "container.devices"] == [
                         "instance.type", "os.release", "os.arch", "python.version",
                         "backend.torch", "backend.pairing", "backend.origin", "backend.tools",
                         "backend.emulator", "backend.lineage", "backend.collectives",
                         "backend.torch_neuron", "driver.module", "driver.packages",
                         "driver.devices",
                         "driver.versions", "driver.cores", "driver.states", "tools.path",
                         "cache.compile", "net.efa", "container.devices"]


@pytest.mark.parametrize("itype, status, words", [
    ("trn2.48xlarge", "pass", "16 devices expected"),
    ("trn3.48xlarge", "pass", "not confirmed"),
    ("trn2.12xlarge", "pass", "not listed in the matrix"),
    ("trn1.32xlarge", "fail", "not supported"),
    ("inf2.xlarge", "fail", "not supported"),
    ("m5.large", "fail", "no Neuron devices"),
])
def test_instance_families(itype, status, words):
    r = run(host(instance=itype), only=["instance.type"])["instance.type"]
    assert r.status == status and words in r.summary
    if itype.startswith("trn1"):
        assert "Trn2" in r.fix and "2.31" in r.fix


def test_unknown_instance_warns_and_assumed_is_said():
    r = run(host(instance=None), only=["instance"])["instance.type"]
    assert r.status == "warn" and "unknown" in r.summary and "--instance-type" in r.fix
    r = run(host(instance="trn2.48xlarge", source="flag", assumed=True),
            only=["instance"])["instance.type"]
    assert r.status == "pass" and "assumed" in r.summary


@pytest.mark.parametrize("os_id, ver, status, words", [
    ("ubuntu", "26.04", "pass", "supported"),
    ("ubuntu", "22.04", "warn", "sources disagree"),
    ("ubuntu", "20.04", "fail", "not in Neuron 2.33"),
    ("debian", "12", "fail", "not supported"),
    ("amzn", "2023", "fail", "not supported"),
])
def test_os_release(os_id, ver, status, words):
    r = run(host(os_id=os_id, os_version=ver), only=["os.release"])["os.release"]
    assert r.status == status and words in r.summary
    if ver == "22.04":
        assert "24.04 or 26.04" in r.fix


def test_ubuntu_2404_warns_about_wheels_only_before_install():
    empty = target({})
    r = run(host(os_version="24.04", tgt=empty), only=["os.release"])["os.release"]
    assert r.status == "warn" and "wheels" in r.summary and "DLAMI" in r.fix
    r = run(host(os_version="24.04"), only=["os.release"])["os.release"]
    assert r.status == "pass"


def test_os_unreadable_and_arch():
    r = run(host(os_error="no os-release under /x"), only=["os.release"])["os.release"]
    assert r.status == "fail" and "no os-release" in r.summary
    assert run(host(arch="aarch64"), only=["os.arch"])["os.arch"].status == "fail"
    assert run(host(arch=None), only=["os.arch"])["os.arch"].status == "warn"


def test_python_range_and_unusable_interpreter():
    r = run(host(tgt=target(version="3.11.7")), only=["python"])["python.version"]
    assert r.status == "fail" and ">=3.12,<3.15" in r.summary and "--venv" in r.fix
    res = run(host(tgt=target(error="/x crashed")))
    assert res["python.version"].status == "fail" and "crashed" in res["python.version"].summary
    # backend.collectives judges the apt package, not the interpreter
    assert all(res[i].status == "skip" for i in res
               if i.startswith("backend.") and i != "backend.collectives")


def test_torch_missing_and_unpaired():
    r = run(host(tgt=target({})), only=["backend.torch"])["backend.torch"]
    assert r.status == "fail" and r.fix == "neuron-env install --python /venv/bin/python"
    r = run(host(tgt=target(dict(GOOD, torch="2.12.1"))), only=["backend.torch"])
    assert r["backend.torch"].status == "fail" and "2.14.0, 2.13.0" in r["backend.torch"].summary


def test_cuda_torch_warns():
    r = run(host(tgt=target(dict(GOOD, torch="2.14.0+cu128"))), only=["backend.torch"])
    assert r["backend.torch"].status == "warn" and "CUDA" in r["backend.torch"].summary
    pk = dict(GOOD, torch="2.14.0", **{"nvidia-cublas-cu12": "12.8.4.1"})
    r = run(host(tgt=target(pk)), only=["backend.torch"])
    assert r["backend.torch"].status == "warn"


@pytest.mark.parametrize("torch, neuronx, status, words, fix_torch", [
    ("2.14.0", "2.14.3.0.1711", "pass", "with torch 2.14.0", None),
    ("2.13.0+cpu", "2.13.3.0", "pass", "with torch 2.13.0", None),
    ("2.13.0", "2.14.3.0.1711", "fail", "needs torch 2.14.0, found torch 2.13.0", "2.14"),
    ("2.14.0", "2.13.3.0.5", "fail", "needs torch 2.13.0, found torch 2.14.0", "2.13"),
    ("2.9.0", "2.9.0.2.15.32035", "fail", "XLA-based", None),
    ("2.14.0", "2.14.2.0", "fail", "not a Neuron 2.33 family", "2.14"),
])
def test_pairing(torch, neuronx, status, words, fix_torch):
    r = run(host(tgt=target(dict(GOOD, torch=torch, **{"torch-neuronx": neuronx}))),
            only=["backend.pairing"])["backend.pairing"]
    assert r.status == status and words in r.summary, r.summary
    if fix_torch:
        assert r.fix.endswith(f"--torch {fix_torch}")


def test_pairing_neuronx_missing_or_torch_missing():
    r = run(host(tgt=target({"torch": "2.14.0"})), only=["backend.pairing"])["backend.pairing"]
    assert r.status == "fail" and "not installed" in r.summary
    r = run(host(tgt=target({"torch-neuronx": "2.14.3.0"})), only=["backend.pairing"])
    assert "needs torch 2.14.0, and torch is not installed" in r["backend.pairing"].summary


def test_placeholders_fail_origin_with_wrong_index_explanation():
    pk = {"torch": "2.14.0", "torch-neuronx": "1.0", "neuronx-cc": "1.0.post1", "nki": "0.0.1"}
    res = run(host(tgt=target(pk)))
    o = res["backend.origin"]
    assert o.status == "fail" and "PLACEHOLDER" in o.summary and "(+2 more)" in o.summary
    assert "pip uninstall -y torch-neuronx neuronx-cc nki" in o.fix
    assert "placeholder" in res["backend.pairing"].summary
    assert "placeholder" in res["backend.tools"].summary


def test_wrong_package_marker_even_with_a_plausible_version():
    res = run(host(tgt=target(marker={"torch-neuronx"})), only=["backend.origin"])
    assert res["backend.origin"].status == "fail"


def _manifest(url_neuron="https://pip.repos.neuron.amazonaws.com/simple/", version=None,
              status="complete", index=None):
    return {"schema": "neuron-env.manifest/1", "status": status, "packages": [
        {"name": "torch", "version": "2.14.0+cpu",
         "index_url": "https://download.pytorch.org/whl/cpu"},
        {"name": "torch-neuronx", "version": version or GOOD["torch-neuronx"],
         "index_url": url_neuron, "index": index}]}


def test_origin_unfinished_install_fails_with_rerun_fix():
    m = dict(_manifest(status="incomplete"), error="interrupted (Ctrl-C or SIGTERM)")
    r = run(host(tgt=target(manifest=m)), only=["backend.origin"])["backend.origin"]
    assert r.status == "fail" and "did not finish" in r.summary and "interrupted" in r.summary
    assert r.fix_command.startswith("neuron-env install") and "uninstall" not in r.fix


def test_origin_trusts_the_index_recorded_at_install_for_a_mirror():
    mirror = "https://artifactory.example.com/api/pypi/neuron/simple"
    r = run(host(tgt=target(manifest=_manifest(mirror, index="neuron"))),
            only=["backend.origin"])["backend.origin"]
    assert r.status == "pass" and "checked at install" in r.details["notes"][0]


def test_origin_from_install_manifest():
    assert run(host(tgt=target(manifest=_manifest())),
               only=["backend.origin"])["backend.origin"].status == "pass"
    r = run(host(tgt=target(manifest=_manifest("https://pypi.org/simple"))),
            only=["backend.origin"])["backend.origin"]
    assert r.status == "fail" and "came from https://pypi.org/simple" in r.summary
    r = run(host(tgt=target(manifest=_manifest(version="2.14.3.0.1"))),
            only=["backend.origin"])["backend.origin"]
    assert r.status == "fail" and "changed after install" in r.summary


def test_origin_accepts_a_configured_mirror():
    mirror = "https://artifactory.example.com/api/pypi/neuron/simple"
    ctx = checks.Context(python_flag="/venv/bin/python", index_overrides={"neuron": mirror})
    f = host(tgt=target(manifest=_manifest(mirror)))
    assert run(f, ctx=ctx, only=["backend.origin"])["backend.origin"].status == "pass"
    assert run(f, only=["backend.origin"])["backend.origin"].status == "fail"


def test_origin_direct_url_warns_and_no_neuron_packages_skips():
    f = host(tgt=target(direct={"torch-neuronx": {"url": "file:///tmp/x.whl"}}))
    r = run(f, only=["backend.origin"])["backend.origin"]
    assert r.status == "warn" and "file:///tmp/x.whl" in r.summary
    assert run(host(tgt=target({"torch": "2.14.0"})),
               only=["backend.origin"])["backend.origin"].status == "skip"


def test_tools():
    r = run(host(tgt=target(dict(GOOD, **{"neuronx-cc": "3.0.1"}))), only=["backend.tools"])
    assert r["backend.tools"].status == "fail" and "neuronx-cc==2.*" in r["backend.tools"].summary
    pk = {k: v for k, v in GOOD.items() if k != "nki"}
    r = run(host(tgt=target(pk)), only=["backend.tools"])["backend.tools"]
    assert r.status == "fail" and "nki is not installed" in r.summary


def test_driver_states():
    r = run(host(module=None), only=["driver.module"])["driver.module"]
    assert r.status == "fail" and "modprobe" in r.fix
    r = run(host(module=None, apt={}), only=["driver.module"])["driver.module"]
    assert r.status == "fail" and "not installed" in r.summary and "aws-neuronx-dkms" in r.fix
    r = run(host(apt=dict(__import__("tests.helpers.facts").helpers.facts.APT,
                          **{"aws-neuron-dkms": "2.5.41.0"})), only=["driver.module"])
    assert r["driver.module"].status == "fail" and "conflicts" in r["driver.module"].summary
    r = run(host(apt={"aws-neuronx-dkms": "2.30.2.0"}), only=["driver.packages"])
    assert r["driver.packages"].status == "warn" and "runtime-lib" in r["driver.packages"].summary


def test_zero_devices_on_trn2_fails_not_pass():
    r = run(host(devices=0), only=["driver.devices"])["driver.devices"]
    assert r.status == "fail" and "should have 16" in r.summary
    r = run(host(devices=8), only=["driver.devices"])["driver.devices"]
    assert r.status == "fail" and "8 of 16" in r.summary


def test_device_checks_under_assumed_type_and_root():
    f = host(instance="trn2.48xlarge", source="flag", assumed=True, devices=0, module=None)
    res = run(f, only=["driver"])
    assert res["driver.devices"].status == "skip" and "assumed" in res["driver.devices"].summary
    assert res["driver.module"].status == "pass"  # the package is there; loading not checked
    f = host(root_explicit=True, module=None, apt={}, instance="trn2.48xlarge")
    assert run(f, only=["driver.module"])["driver.module"].status == "fail"


def test_non_neuron_instance_skips_device_checks():
    res = run(host(instance="m5.large", devices=0, module=None, apt={}), only=["driver"])
    assert all(r.status == "skip" for r in res.values()), res


def test_neuron_ls_findings():
    bad = NeuronLsFacts("/usr/bin/neuron-ls", error="neuron-ls -j hung", timed_out=True)
    r = run(host(neuron_ls=bad), only=["driver.devices"])["driver.devices"]
    assert r.status == "warn" and "hung" in r.summary
    fewer = NeuronLsFacts("/usr/bin/neuron-ls", devices=({"neuron_device": 0},) * 15)
    r = run(host(neuron_ls=fewer), only=["driver.devices"])["driver.devices"]
    assert r.status == "warn" and "lists 15" in r.summary


def test_a_crashing_check_becomes_an_error_result(monkeypatch):
    def boom(facts, m, ctx):
        raise KeyError("oops")

    monkeypatch.setattr(checks, "REGISTRY", [replace(c, fn=boom) if c.id == "os.arch" else c
                                             for c in checks.registered()])
    res = run(host())
    assert res["os.arch"].status == "error" and "KeyError" in res["os.arch"].summary
    assert res["os.release"].status == "pass"  # the rest still ran
    assert exit_code(list(res.values())) == 3


def test_select_only_skip_and_unknown_ids():
    assert checks.select(["driver"], []) == ["driver.module", "driver.packages",
                                              "driver.devices", "driver.versions",
                                              "driver.cores", "driver.states", "driver.dkms"]
    assert "os.arch" not in checks.select([], ["os.arch"])
    with pytest.raises(UsageError, match="unknown check id"):
        checks.select(["nope"], [])


def test_exit_code_reduce():
    ok = Result("a.b", "x", "pass", "")
    warn = Result("a.c", "x", "warn", "")
    fail = Result("a.d", "x", "fail", "")
    to = Result("a.e", "x", "fail", "", timed_out=True)
    err = Result("a.f", "x", "error", "")
    assert exit_code([ok, warn]) == 0 and exit_code([ok, warn], strict=True) == 1
    assert exit_code([ok, fail]) == 1 and exit_code([fail, to]) == 4
    assert exit_code([to, err]) == 3


def test_emulator_is_labelled():
    r = run(host(tgt=target(dict(GOOD, **{"neuron-emulator": "0.1.0"}))),
            only=["backend.emulator"])["backend.emulator"]
    assert r.status == "fail" and "beside torch-neuronx" in r.summary  # both: never both
    assert "pip uninstall -y neuron-emulator" in r.fix
    pk = {"torch": "2.13.0", "neuron-emulator": "0.1.0"}
    r = run(host(instance=None, tgt=target(pk)), only=["backend.emulator"])["backend.emulator"]
    assert r.status == "warn" and r.summary.startswith("EMULATED") and r.details["emulated"]
    r = run(host(tgt=target(pk)), only=["backend.emulator"])["backend.emulator"]
    assert r.status == "fail" and "trn2.48xlarge" in r.summary  # a Neuron instance (#45)
