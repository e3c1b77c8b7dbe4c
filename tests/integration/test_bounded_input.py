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
