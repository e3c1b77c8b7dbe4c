"""docs/integrations.md's manifest signing, run LITERALLY (issue #36, finding 15): the
publisher's `sign-manifest` commands in bash (an Ed25519 key made, its public half exported,
index.json signed), the host's `verify-manifest` command with only the example host swapped for
a loopback https server (its CA through SSL_CERT_FILE), then the same after the manifest was
tampered with: refused, nothing written."""

from __future__ import annotations

import shlex
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import REPO, cli_env
from tests.helpers.snippets import snippet
from tests.integration.test_matrix_update import published, serve, tls

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("openssl") is None,
                                 reason="openssl is not installed: the documented signing "
                                        "steps cannot run")]
__all__ = ["tls"]


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`script` as a user pastes it; `neuron-env` is this checkout's CLI."""
    shim = f"neuron-env() {{ {shlex.quote(sys.executable)} -m neuron_env \"$@\"; }}\n"
    return subprocess.run(["bash", "-e", "-c", shim + script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_documented_ed25519_signing_works_end_to_end(
        tmp_path: Path, tls: tuple[ssl.SSLContext, Path]) -> None:
    ctx, ca = tls
    site, user, a = published(tmp_path)
    env = {**cli_env(NEURON_ENV_MATRIX_DIR=str(user), SSL_CERT_FILE=str(ca)),
           "PYTHONPATH": str(REPO)}
    signed = bash(snippet("sign-manifest"), site, env)
    assert signed.returncode == 0, signed.stderr
    assert (site / "index.json.sig").stat().st_size == 64  # an Ed25519 signature, raw
    assert "ED25519" in subprocess.run(["openssl", "pkey", "-pubin", "-in",
                                        str(site / "matrices.pub.pem"), "-noout", "-text"],
                                       capture_output=True, text=True).stdout.upper()
    verify = snippet("verify-manifest")
    assert "https://matrices.example.com" in verify
    with serve(site, ctx) as url:
        run = verify.replace("https://matrices.example.com", url)
        tampered = site / "index.json"
        good = tampered.read_text()
        tampered.write_text(good.replace('"matrices"', '"matrices" ', 1))
        res = bash(run, site, env)
        assert res.returncode == 2 and "does not verify" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and not user.exists()
        tampered.write_text(good)
        res = bash(run, site, env)
        assert res.returncode == 0, res.stderr + res.stdout
    assert (user / "neuron-2.34.toml").read_text() == a
