"""doctor's device steps: --smoke adds smoke.device, --collectives (with --smoke) adds
collectives.all_reduce after it, skipped when the device did not pass."""

from __future__ import annotations

import pytest

from neuron_env.commands import doctor
from neuron_env.errors import UsageError
from neuron_env.report.model import Result


def test_collectives_without_smoke_is_a_usage_error():
    with pytest.raises(UsageError) as e:
        doctor.validate(doctor.DoctorOptions(collectives=True))
    assert "add --smoke" in e.value.hint


def test_selected_after_the_smoke_check_only_when_asked():
    ids = doctor.select(doctor.DoctorOptions(smoke=True, collectives=True))
    assert ids[-2:] == ["smoke.device", "collectives.all_reduce"]
    assert "collectives.all_reduce" not in doctor.select(doctor.DoctorOptions(smoke=True))
    assert doctor.select(doctor.DoctorOptions(smoke=True, collectives=True,
                                              only=["collectives"])) == ["collectives.all_reduce"]


@pytest.mark.parametrize("status", ["fail", "error", "skip"])
def test_skipped_when_the_device_did_not_pass(status):
    smoke = Result("smoke.device", "smoke", status, "no device")
    r = doctor._collectives(None, doctor.DoctorOptions(smoke=True, collectives=True), smoke)
    assert (r.id, r.status) == ("collectives.all_reduce", "skip")
    assert f"did not pass ({status}" in r.summary
