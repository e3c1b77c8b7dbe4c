"""`fleet report s3://` against an S3 endpoint that trickles one object's body (one byte every
0.5 s: botocore's read timeout, per recv, never trips): that object becomes "unreadable"
(timed out) at its deadline and the others are still aggregated (issue #25)."""

from __future__ import annotations

import json
import time

import jsonschema
import pytest

from tests.helpers.aws import aws_env
from tests.helpers.cli import REPO, run_cli
from tests.helpers.servers import S3

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/fleet.schema.json").read_text())


def _report(iid: str) -> bytes:
    return json.dumps({"schema": "neuron-env.doctor/1", "exit_code": 0, "results": [],
                       "summary": {"pass": 0}, "target": {"instance": {"instance_id": iid}}}
                      ).encode()


def _bucket(trickled: str) -> dict[str, dict[str, bytes]]:
    return {"reports": {f"fleet/{n}.json": _report(f"i-0aaaaaaaaaaaaaa{n}")
                        for n in ("a1", "b2", "c3")} | {trickled: _report("i-0bbbbbbbbbbbbbbbb")}}


def test_a_trickled_object_times_out_and_the_rest_is_aggregated():
    slow = "fleet/b-slow.json"  # read between the others: they must come after it too
    with S3(_bucket(slow), trickle=frozenset({slow})) as s3:
        t0 = time.monotonic()
        p = run_cli("fleet", "report", "s3://reports/fleet", "--format", "json",
                    env=aws_env(s3.url), timeout=45)
        took = time.monotonic() - t0
    body = json.loads(p.stdout)
    jsonschema.validate(body, SCHEMA)
    by_id = {r["id"]: r for r in body["instances"]}
    assert sorted(by_id) == ["b-slow", "i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaab2",
                             "i-0aaaaaaaaaaaaaac3"], by_id
    slow_one = by_id["b-slow"]
    assert slow_one["verdict"] == "unreadable"
    assert "timed out after 10 s" in json.dumps(slow_one), slow_one
    assert body["summary"]["unreadable"] == 1 and body["summary"]["pass"] == 3
    assert p.returncode == 1 and took < 30, (p.returncode, took)


def test_the_commands_timeout_bounds_all_reads():
    slow = "fleet/z-slow.json"
    with S3(_bucket(slow), trickle=frozenset({slow})) as s3:
        t0 = time.monotonic()
        p = run_cli("fleet", "report", "s3://reports/fleet", "--format", "json",
                    "--timeout", "3", env=aws_env(s3.url), timeout=45)
        took = time.monotonic() - t0
    body = json.loads(p.stdout)
    jsonschema.validate(body, SCHEMA)
    assert body["summary"]["pass"] == 3 and body["summary"]["unreadable"] == 1, body
    slow_one = next(r for r in body["instances"] if r["id"] == "z-slow")
    assert "z-slow.json: timed out after" in json.dumps(slow_one), slow_one
    assert p.returncode == 1 and took < 15, (p.returncode, took)
