"""Issue #36 through real processes and loopback servers (items 1, 2, 11, 14, 16): the one
reader's whole-read deadline against a server that sends a byte a second; and the CLI refusing
hostile outputs and inputs with exit 2, at once, with the target untouched. No torch needed:
each case is refused before a target interpreter would start."""

from __future__ import annotations

import json
import os
import stat
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler

import pytest

from neuron_env.errors import CommandTimeout
from neuron_env.guards.files import read_body
from tests.helpers.cli import run_cli
from tests.helpers.servers import _Loopback

pytestmark = pytest.mark.integration


class Trickle(_Loopback):
    """Answers every GET with a 200-byte body, one byte a second (no recv ever times out)."""

    def __init__(self) -> None:
        import threading

        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "200")
                self.end_headers()
                self.wfile.flush()
                outer._drip(self.wfile, b"x" * 200, 1.0)

            def log_message(self, *args: object) -> None:
                pass

        self._serve(Handler)


def test_a_one_byte_a_second_body_ends_at_the_whole_read_deadline():
    with Trickle() as srv, urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/m.json",
                                                  timeout=30) as resp, \
            pytest.raises(CommandTimeout, match="did not arrive within 2 s"):
        read_body(resp, 1 << 20, 2.0, "http://127.0.0.1/m.json")


# -- the CLI edge ----------------------------------------------------------------------------------
def _untouched(path) -> tuple:
    st = os.lstat(path)
    return st.st_mode, st.st_ino, st.st_rdev


@pytest.mark.parametrize("extra", [[], ["--world-size", "2", "--device", "cpu"]])
def test_save_baseline_onto_dev_null_or_a_link_is_refused(tmp_path, extra):
    victim = tmp_path / "theirs.json"
    victim.write_text("THEIRS\n")
    link = tmp_path / "base.pt"
    link.symlink_to(victim)
    before = _untouched("/dev/null")
    for target in ("/dev/null", str(link)):
        p = run_cli("trial", "builtin:mlp", *extra, "--python", sys.executable,
                    "--save-baseline", target, "--format", "json")
        assert p.returncode == 2, p.stderr
        assert json.loads(p.stdout)["error"]["code"] == "usage", p.stdout
        assert "Traceback" not in p.stderr
    assert _untouched("/dev/null") == before and stat.S_ISCHR(before[0])
    assert victim.read_text() == "THEIRS\n" and link.is_symlink()


@pytest.mark.parametrize("flag, value", [("--rtol", "nan"), ("--atol", "inf"), ("--rtol", "-1"),
                                         ("--price-per-hour", "nan"),
                                         ("--price-per-hour", "inf"),
                                         ("--price-per-hour", "-1")])
def test_non_finite_or_negative_numbers_are_exit_2_in_json_too(flag, value):
    p = run_cli("trial", "builtin:mlp", "--world-size", "2", "--device", "cpu", "--python",
                sys.executable, flag, value, "--format", "json")
    assert p.returncode == 2, p.stderr
    doc = json.loads(p.stdout)
    assert doc["exit_code"] == 2 and flag in doc["error"]["message"], doc


def test_collect_and_baseline_fifos_are_refused_at_once(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "reference.json")
    base = tmp_path / "base.json"
    os.mkfifo(base)
    common = ("trial", "builtin:mlp", "--world-size", "2", "--device", "cpu", "--python",
              sys.executable)
    p = run_cli(*common, "--collect", str(run), timeout=60)
    assert p.returncode == 2 and "is a FIFO" in p.stderr and "Traceback" not in p.stderr
    p = run_cli(*common, "--collect", str(run), "--baseline", str(base), timeout=60)
    assert p.returncode == 2 and "is a FIFO" in p.stderr and "Traceback" not in p.stderr


def test_ca_bundle_fifo_is_refused_and_http_with_a_bundle_is_refused(tmp_path):
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    d = tmp_path / "m"
    p = run_cli("matrix", "update", "--from", "https://127.0.0.1:9/index.json", "--ca-bundle",
                str(fifo), "--dir", str(d), "--timeout", "5", timeout=60)
    assert p.returncode == 2 and "is a FIFO" in p.stderr, p.stderr
    pem = tmp_path / "real.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\n")
    p = run_cli("matrix", "update", "--from", "http://127.0.0.1:9/index.json", "--ca-bundle",
                str(pem), "--dir", str(d), "--timeout", "5", timeout=60)
    assert p.returncode == 2 and "only https:// uses a CA bundle" in p.stderr, p.stderr
