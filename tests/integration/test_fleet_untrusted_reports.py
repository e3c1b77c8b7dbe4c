"""`fleet report` on reports someone else wrote (#25 items 22-23): a 200k-deep JSON file and a
schema-shaped file with results of the wrong type are one "unreadable" instance each, the rest
is aggregated; an S3 object over the 16 MiB cap is refused while it streams (RSS stays low)."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from tests.helpers.aws import aws_env, boto
from tests.helpers.cli import REPO, run_cli

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/fleet.schema.json").read_text())


def _report(iid: str, exit_code: int = 0) -> dict:
    return {"schema": "neuron-env.doctor/1", "exit_code": exit_code,
            "summary": {"pass": 1, "warn": 0, "fail": 0, "skip": 0, "error": 0},
            "target": {"instance": {"instance_id": iid, "type": "trn2.48xlarge"},
                       "packages": {"torch": "2.13.0"}},
            "results": [{"id": "os.release", "category": "os", "status": "pass",
                         "summary": "Ubuntu 24.04"}]}


BAD_SHAPES = {
    "results_mixed": {"results": [1, "two", None]},
    "results_dict": {"results": {"a": 1}},
    "summary_list": {"summary": [1]},
    "target_str": {"target": "x"},
    "packages_list": {"target": {"packages": ["torch"]}},
    "versions_list": {"target": {"packages": {"torch": ["2.13", {"x": 1}]}}},
    "exit_code_str": {"exit_code": "1"},
    "instance_id_list": {"target": {"instance": {"instance_id": ["i-1"]}}},
}


def test_one_bad_file_is_one_unreadable_instance(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    (d / "good.json").write_text(json.dumps(_report("i-0good")))
    (d / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    (d / "deepobj.json").write_text('{"schema": "neuron-env.doctor/1", "x": '
                                    + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}")
    for name, patch in BAD_SHAPES.items():
        (d / f"{name}.json").write_text(json.dumps({**_report(f"i-{name}"), **patch}))
    p = run_cli("fleet", "report", str(d), "--format", "json")
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    body = json.loads(p.stdout)
    jsonschema.validate(body, SCHEMA)
    inst = {r["source"].rsplit("/", 1)[-1]: r for r in body["instances"]}
    assert inst["good.json"]["verdict"] == "pass"
    # a list where a version or an instance id goes: the version shown as text, the file's
    # name as the id; the report still counts
    assert inst["versions_list.json"]["verdict"] == "pass"
    assert inst["instance_id_list.json"]["id"] == "instance_id_list"
    assert inst["deep.json"]["verdict"] == "unreadable"
    assert "nested too deeply" in inst["deep.json"]["reason"]
    assert inst["deepobj.json"]["verdict"] == "unreadable"
    assert inst["results_mixed.json"]["verdict"] == "unreadable"
    assert "results[0] is int" in inst["results_mixed.json"]["reason"]
    for name in BAD_SHAPES:
        if name not in ("versions_list", "instance_id_list"):
            assert inst[f"{name}.json"]["verdict"] == "unreadable", name
    for fmt in ("text", "junit"):
        q = run_cli("fleet", "report", str(d), "--format", fmt)
        assert q.returncode == 1 and q.stdout and "Traceback" not in q.stderr


RSS = ("import resource, subprocess, sys\n"
       "p = subprocess.run(sys.argv[1:], capture_output=True, timeout=300)\n"
       "sys.stderr.buffer.write(p.stderr)\n"
       "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
       "sys.stdout.flush()\n")


def _rss(url: str, uri: str) -> tuple[int, int]:
    """fleet report's exit code and peak RSS (KiB), measured by a fresh parent process."""
    p = subprocess.run([sys.executable, "-c", RSS, sys.executable, "-m", "neuron_env", "fleet",
                        "report", uri, "--format", "json"], capture_output=True, text=True,
                       env=aws_env(url), cwd=REPO, timeout=320)
    rc, kib = p.stdout.split()
    return int(rc), int(kib)


def test_s3_object_over_the_cap_is_refused_while_streaming(moto_url):
    s3 = boto("s3", moto_url)
    s3.create_bucket(Bucket="big")
    s3.put_object(Bucket="big", Key="small/a.json", Body=json.dumps(_report("i-0a")).encode())
    s3.put_object(Bucket="big", Key="large/a.json", Body=json.dumps(_report("i-0a")).encode())
    s3.put_object(Bucket="big", Key="large/huge.json", Body=b" " * (40 * 1024 * 1024))
    rc_small, small = _rss(moto_url, "s3://big/small")
    rc_large, large = _rss(moto_url, "s3://big/large")
    assert rc_small == 0 and rc_large == 1
    # 40 MB read into memory would add >= 40 MiB; streaming with the cap adds almost nothing
    assert large - small < 24 * 1024, (small, large)
    body = json.loads(run_cli("fleet", "report", "s3://big/large", "--format", "json",
                              env=aws_env(moto_url)).stdout)
    huge = next(r for r in body["instances"] if r["source"].endswith("huge.json"))
    assert huge["verdict"] == "unreadable" and "too large" in huge["reason"]
    assert str(16 * 1024 * 1024) in huge["reason"]
    assert body["summary"]["pass"] == 1
