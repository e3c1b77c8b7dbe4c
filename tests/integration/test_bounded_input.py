"""Bounded input (#25 items 24, 25, 28, 29): a --waivers file that is 100k-deep, the wrong
shape, a FIFO or /dev/zero; an IMDS that answers one byte every 0.3 s; --root never listing the
real host's interpreters; a dpkg status over the cap said to be too large."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from tests.conftest import run_cli
from tests.helpers import roots

pytestmark = pytest.mark.integration


def _doctor(root, *extra: str, timeout: float = 60):
    return run_cli("doctor", "--root", str(root), "--python", sys.executable, "--only",
                   "driver.packages", "--format", "json", *extra)


@pytest.mark.parametrize("kind,expect", [
    ("deep", "nested too deeply"),
    ("int", "`waiver` is a int, not an array of [[waiver]] tables"),
    ("table", "`waiver` is a dict, not an array"),
    ("idint", "needs id and reason"),
    ("untilint", "until is a int, not a date"),
    ("fifo", "is a FIFO, not a regular file"),
    ("devzero", "is a device, not a regular file"),
    ("huge", "is larger than 1048576 bytes"),
    ("binary", "not UTF-8"),
])
def test_hostile_waivers_file_is_exit_2_with_a_located_message(tmp_path, kind, expect):
    root = roots.trn2_host(tmp_path / "r", packages={})
    w = tmp_path / "w.toml"
    if kind == "deep":
        w.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    elif kind == "int":
        w.write_text("# waivers\n\nwaiver = 5\n")
    elif kind == "table":
        w.write_text('[waiver]\nid = "driver"\nreason = "r"\n')
    elif kind == "idint":
        w.write_text('[[waiver]]\nid = 5\nreason = "r"\n')
    elif kind == "untilint":
        w.write_text('[[waiver]]\nid = "driver"\nreason = "r"\nuntil = 5\n')
    elif kind == "fifo":
        os.mkfifo(w)
    elif kind == "devzero":
        w.symlink_to("/dev/zero")
    elif kind == "huge":
        w.write_text("# " + "x" * (2 * 1024 * 1024) + "\n")
    else:
        w.write_bytes(b'[[waiver]]\nid = "\xff"\n')
    t0 = time.monotonic()
    p = _doctor(root, "--waivers", str(w))
    assert time.monotonic() - t0 < 50  # a FIFO never blocks (the subprocess limit is 60 s)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    err = json.loads(p.stdout)["error"]["message"]
    assert err.startswith(f"--waivers {w}") and expect in err, err
    assert "Traceback" not in p.stderr
    if kind == "int":
        assert "(line 3)" in err


# -- 25: IMDS that trickles ------------------------------------------------------------------
def test_trickling_imds_is_cut_at_the_whole_exchange_deadline(tmp_path):
    """One byte every 0.3 s (token PUT and GET): each recv is quick, so a per-recv timeout
    never fires; the 1 s budget is a deadline for the exchange. The subprocess limit is the
    assertion (minutes before the fix)."""
    import subprocess

    from tests.conftest import cli_env
    from tests.helpers.servers import IMDS

    root = roots.make_root(tmp_path / "r", os="ubuntu-26.04", vendor=None)
    with IMDS("trickle") as srv:
        env = cli_env(AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=srv.url)
        try:
            p = subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root",
                                str(root), "--python", sys.executable, "--only", "instance",
                                "--format", "json"], capture_output=True, text=True, env=env,
                               timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("doctor still waiting on a trickling IMDS after 20 s")
    doc = json.loads(p.stdout)
    assert doc["elapsed_s"] < 10
    inst = doc["target"]["instance"]
    assert inst["source"] != "imds"
    assert any("timed out" in n for n in inst.get("notes") or []) or "timed out" in p.stdout
