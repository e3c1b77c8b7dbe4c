"""Bounded input (#25 items 24, 25, 28, 29): a --waivers file that is 100k-deep, the wrong
shape, a FIFO or /dev/zero; an IMDS that answers one byte every 0.3 s; --root never listing the
real host's interpreters; a dpkg status over the cap said to be too large."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from tests.helpers import roots
from tests.helpers.cli import run_cli

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

    from tests.helpers.cli import cli_env
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


# -- 28: --root never lists the real host's interpreters --------------------------------------
def test_root_fix_lines_name_only_the_images_interpreters(tmp_path):
    from tests.helpers.cli import cli_env

    host = tmp_path / "host"
    for rel in ("bin/python3.12", "bin/python3.13", "home/.pyenv/versions/3.13.1/bin/python3.13",
                "home/.local/share/uv/python/cpython-3.12/bin/python3.12", "bin/uv"):
        roots.add_executable(host / rel)
    env = cli_env(PATH=f"{host / 'bin'}:{os.environ['PATH']}", HOME=str(host / "home"),
                  PYENV_ROOT=str(host / "home/.pyenv"))
    root = roots.trn2_host(tmp_path / "r")
    # an absolute link in the image that points at the real host's interpreter: not the image's
    (root / "usr/local/bin").mkdir(parents=True, exist_ok=True)
    (root / "usr/local/bin/python3.14").symlink_to(host / "bin/python3.13")

    def fix_text() -> str:
        p = run_cli("doctor", "--root", str(root), "--python", str(tmp_path / "nope"),
                    "--only", "python", "--format", "json", env=env)
        doc = json.loads(p.stdout)
        return " ".join(str(r.get("fix")) + str(r.get("fix_command")) for r in doc["results"])

    text = fix_text()
    assert str(host) not in text and "/.pyenv/" not in text and "found on this host" not in text
    assert "python3.14" not in text and "uv python install" not in text
    roots.add_executable(root / "usr/bin/python3.13")
    text = fix_text()
    assert "--python /usr/bin/python3.13" in text and "found in the image" in text
    assert str(host) not in text


# -- 29: a dpkg status over the cap ----------------------------------------------------------
def test_dpkg_status_over_the_cap_is_said_to_be_too_large(tmp_path):
    DPKG_MAX = 64 << 20  # probes.host.DPKG_MAX, the documented cap
    root = roots.trn2_host(tmp_path / "r")
    status = root / "var/lib/dpkg/status"
    with open(status, "r+b") as f:  # a sparse file: over the cap without the disk
        f.truncate(DPKG_MAX + 4096)
    size = status.stat().st_size
    p = run_cli("doctor", "--root", str(root), "--python", sys.executable, "--only", "driver",
                "--format", "json")
    doc = json.loads(p.stdout)
    r = {x["id"]: x for x in doc["results"]}["driver.packages"]
    assert r["status"] == "skip", r
    assert f"too large ({size} bytes, cap {DPKG_MAX}): skipped" in r["summary"]
    assert "not a Debian/Ubuntu" not in r["summary"]
    os.unlink(status)
    os.mkfifo(status)  # and a FIFO there: never read, said so
    doc = json.loads(run_cli("doctor", "--root", str(root), "--python", sys.executable,
                             "--only", "driver", "--format", "json").stdout)
    r = {x["id"]: x for x in doc["results"]}["driver.packages"]
    assert "FIFO" in r["summary"] and "not a Debian/Ubuntu" not in r["summary"]
