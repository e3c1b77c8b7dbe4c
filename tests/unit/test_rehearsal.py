"""The newcomer's path without Trainium: an emulated environment on a host with no Neuron
device is judged by the emulator's own rules (Python 3.11 is fine there), and the Trainium-only
checks say why they do not apply instead of failing."""

from __future__ import annotations

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.report.doctor_text import render
from neuron_env.report.model import Report
from tests.helpers.facts import host, target

M = catalog.select(None)
CTX = checks.Context(python_flag="/venv/bin/python")
EMULATED = {"torch": "2.13.0+cpu", "neuron-emulator": "0.1.0"}


def laptop(packages=None, version="3.11.7", **kw):
    return host(instance=None, source=None, devices=0, module=None, apt={}, dpkg=False,
                tgt=target(packages or EMULATED, version), **kw)


def test_an_emulated_env_without_a_device_has_no_failure_and_python_311_passes():
    rs = {r.id: r for r in checks.run_checks(laptop(), M, CTX, checks.all_ids())}
    assert not [r.id for r in rs.values() if r.status in ("fail", "error")], {
        r.id: r.summary for r in rs.values() if r.status == "fail"}
    py = rs["python.version"]
    assert py.status == "pass" and "3.11.7" in py.summary and "emulator" in py.summary
    assert rs["backend.emulator"].status == "warn"  # still said loudly: not Trainium
    for cid in ("backend.pairing", "driver.devices", "driver.module", "tools.path"):
        assert rs[cid].status == "skip" and "emulated rehearsal" in rs[cid].summary


def test_a_python_the_emulator_refuses_still_fails():
    r = checks.run_checks(laptop(version="3.9.18"), M, CTX, ["python.version"])[0]
    assert r.status == "fail" and "emulator" in r.summary


def test_a_device_or_a_real_torch_neuronx_is_judged_as_trainium():
    with_device = host(tgt=target(EMULATED, "3.11.7"))
    r = checks.run_checks(with_device, M, CTX, ["python.version"])[0]
    assert r.status == "fail"  # the matrix's Python range applies
    mixed = laptop({**EMULATED, "torch-neuronx": "2.13.3.0.1"})
    r = checks.run_checks(mixed, M, CTX, ["backend.emulator", "driver.devices"])
    assert [x.status for x in r] == ["fail", "fail"]


def doctor_report(facts) -> Report:
    return Report(schema="neuron-env.doctor/1", tool={}, matrix=None,
                  target=facts.serialize(), results=tuple(
                      checks.run_checks(facts, M, CTX, checks.all_ids())), exit_code=1)


def test_a_host_without_a_device_leads_with_how_to_rehearse():
    out = render(doctor_report(laptop({"torch": "2.14.0"}, "3.12.4")))
    first = out.splitlines()[0]
    assert first.startswith("No Neuron device here") and "rehearse" in first
    assert "neuron-env install --backend emulated --venv" in out.splitlines()[1]


def test_a_trainium_host_or_an_emulated_env_gets_no_rehearsal_lead():
    assert not render(doctor_report(host())).startswith("No Neuron device")
    assert not render(doctor_report(laptop())).startswith("No Neuron device")


def test_an_image_under_root_gets_no_rehearsal_lead():
    image = laptop({"torch": "2.14.0"}, "3.12.4", root_explicit=True)
    assert not render(doctor_report(image)).startswith("No Neuron device")


def test_a_neuron_instance_type_outranks_a_left_over_emulator():
    """#45 finding 4: an emulator dist left in the venv of a trn2.48xlarge with no driver and no
    device must not turn the hardware checks into "skip (emulated rehearsal)": they run (and
    fail), backend.emulator fails, doctor does not pass the node."""
    broken = host(instance="trn2.48xlarge", devices=0, module=None, apt={}, dpkg=False,
                  tgt=target(EMULATED, "3.11.7"))
    rs = {r.id: r for r in checks.run_checks(broken, M, CTX, checks.all_ids())}
    assert rs["backend.emulator"].status == "fail"
    assert "trn2.48xlarge" in rs["backend.emulator"].summary
    assert rs["driver.devices"].status == "fail"
    assert not [r.id for r in rs.values() if "emulated rehearsal" in r.summary]
