"""ssm_fleet.bounded: one S3 exchange's whole-exchange deadline (threads only, no I/O)."""

from __future__ import annotations

import threading
import time

import pytest

from neuron_env.aws import ssm_fleet
from neuron_env.errors import AwsError


def test_a_stalled_exchange_times_out_with_its_seconds():
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(AwsError) as e:
        ssm_fleet.bounded(lambda ex: release.wait(5), "s3://b/k", base=0.3)
    release.set()
    assert e.value.code == "timed-out" and "s3://b/k: timed out after 0 s" in e.value.message
    assert time.monotonic() - t0 < 2


def test_the_size_allowance_moves_the_deadline_on(monkeypatch):
    monkeypatch.setattr(ssm_fleet, "OBJECT_RATE", 1000)

    def work(ex):
        ex.allow(500)  # +0.5 s: the 0.6 s of work ends before 0.3 + 0.5
        time.sleep(0.6)
        return b"ok"
    assert ssm_fleet.bounded(work, "s3://b/k", base=0.3) == b"ok"


def test_never_past_the_callers_deadline_and_errors_pass_through():
    with pytest.raises(AwsError, match="ran out before it"):
        ssm_fleet.bounded(lambda ex: b"", "s3://b/k", time.monotonic() - 1)

    def fail(ex):
        raise AwsError("s3://b/k: NoSuchKey: gone", "NoSuchKey")
    with pytest.raises(AwsError, match="NoSuchKey"):
        ssm_fleet.bounded(fail, "s3://b/k")
    release = threading.Event()
    with pytest.raises(AwsError, match="timed out"):
        ssm_fleet.bounded(lambda ex: release.wait(5), "s3://b/k", time.monotonic() + 0.2)
    release.set()
