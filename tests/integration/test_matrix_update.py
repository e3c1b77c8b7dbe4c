"""`matrix update --from`: over a loopback HTTP server, an HTTPS one with a self-signed CA
made here, file:// and moto's S3; the pins, validation and "never worse" refusals, and doctor
saying which matrix it used."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import functools
import hashlib
import json
import shutil
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers.aws import aws_env, boto
from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.snippets import snippet

pytestmark = pytest.mark.integration

SCHEMAS = REPO / "neuron_env" / "schemas"
UPDATE = json.loads((SCHEMAS / "matrix-update.schema.json").read_text())
DOCTOR = json.loads((SCHEMAS / "doctor.schema.json").read_text())
BASE = (REPO / "matrices" / "neuron-2.33.toml").read_text()


def matrix(release: str, date: str = "2026-12-01") -> str:
    out = BASE.replace('release = "2.33"', f'release = "{release}"', 1)
    out = out.replace('date = "2026-10-19"', f'date = "{date}"', 1)
    assert out.count(release) >= 1 and date in out
    return out


def digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


@contextlib.contextmanager
def serve(root: Path, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    with serve_handler(functools.partial(_Quiet, directory=str(root)), tls) as url:
        yield url


@contextlib.contextmanager
def serve_handler(handler: Any, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """A loopback server of `handler` in a daemon thread: its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A CA and a certificate for 127.0.0.1 it signed: (server context, CA bundle file)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d = tmp_path_factory.mktemp("tls")
    now = dt.datetime.now(dt.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "neuron-env test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    import ipaddress

    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (d / "ca.pem").write_bytes(ca.public_bytes(pem))
    (d / "cert.pem").write_bytes(cert.public_bytes(pem))
    (d / "key.pem").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
    return ctx, d / "ca.pem"


def update(user: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
           ) -> tuple[int, dict, str]:
    res = run_cli("matrix", "update", *args, "--format", "json",
                  env={**(env or cli_env()), "NEURON_ENV_MATRIX_DIR": str(user)},
                  timeout=timeout)
    assert "Traceback" not in res.stderr, res.stderr
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, UPDATE)
    return res.returncode, doc, res.stderr


def doctor_matrix(user: Path) -> tuple[dict, str]:
    env = cli_env(NEURON_ENV_MATRIX_DIR=str(user))
    js = run_cli("doctor", "--only", "os", "--format", "json", env=env)
    doc = json.loads(js.stdout)
    jsonschema.validate(doc, DOCTOR)
    text = run_cli("doctor", "--only", "os", env=env).stdout
    return doc["matrix"], text


def test_http_pinned_file_installs_and_doctor_uses_it(tmp_path: Path) -> None:
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    new = matrix("2.34")
    (site / "neuron-2.34.toml").write_text(new)
    with serve(site) as url:
        src = f"{url}/neuron-2.34.toml"
        # no pin: refused, nothing written
        code, doc, _ = update(user, "--from", src)
        assert code == 2 and "without a pinned digest" in doc["error"]["message"]
        assert not user.exists()
        code, doc, _ = update(user, "--from", f"{src}#sha256={digest(new)}")
        assert code == 0 and [f["action"] for f in doc["files"]] == ["install"]
        assert (user / "neuron-2.34.toml").read_text() == new
        # again: unchanged
        code, doc, _ = update(user, "--from", src, "--sha256", digest(new))
        assert code == 0 and doc["files"][0]["action"] == "unchanged"
        # the file changed on the server since it was pinned: refused, the good one kept
        (site / "neuron-2.34.toml").write_text(matrix("2.34", "2026-12-24"))
        code, doc, _ = update(user, "--from", f"{src}#sha256={digest(new)}")
        assert code == 2 and "does not match the pinned" in doc["error"]["message"]
        assert (user / "neuron-2.34.toml").read_text() == new
        # a missing file: exit 2 with the HTTP status
        code, doc, _ = update(user, "--from", f"{url}/nope.toml#sha256={'0' * 64}")
        assert code == 2 and "HTTP 404" in doc["error"]["message"]
    m, text = doctor_matrix(user)
    assert m == {"release": "2.34", "source": str(user / "neuron-2.34.toml"), "bundled": False,
                 "origin": "user", "path": str(user / "neuron-2.34.toml"),
                 "sha256": digest(new), "date": "2026-12-01"}
    assert f"matrix: Neuron 2.34 (user, 2026-12-01, sha256 {digest(new)[:12]}…)" in text
    listed = json.loads(run_cli("matrix", "list", "--format", "json",
                                env=cli_env(NEURON_ENV_MATRIX_DIR=str(user))).stdout)
    assert listed["matrices"][0] == {"release": "2.34", "path": str(user / "neuron-2.34.toml"),
                                     "bundled": False, "default": True, "origin": "user"}
    # --matrix still wins over the user directory
    pinned = json.loads(run_cli("doctor", "--only", "os", "--format", "json", "--matrix", "2.33",
                                env=cli_env(NEURON_ENV_MATRIX_DIR=str(user))).stdout)
    assert pinned["matrix"]["origin"] == "bundled" and pinned["matrix"]["release"] == "2.33"


def test_never_worse(tmp_path: Path) -> None:
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    good = matrix("2.34", "2026-12-01")
    files = {"good.toml": good, "older-revision.toml": matrix("2.34", "2026-11-01"),
             "newer-revision.toml": matrix("2.34", "2026-12-15"),
             "older-release.toml": matrix("2.32.9"),
             "invalid.toml": good.replace('python = ">=', 'python = "banana', 1)
             if 'python = ">=' in good else good + "\n[nonsense]\nx = 1\n",
             "huge.toml": good + "#" * (1 << 21)}
    for name, text in files.items():
        (site / name).write_text(text)

    def pin(name: str) -> str:
        return f"{url}/{name}#sha256={digest(files[name])}"

    with serve(site) as url:
        assert update(user, "--from", pin("good.toml"))[0] == 0
        for name, why in (("older-revision.toml", "older revision of Neuron 2.34"),
                          ("older-release.toml", "older than the newest known release"),
                          ("invalid.toml", "fails matrix validate")):
            code, doc, _ = update(user, "--from", pin(name))
            assert code == 2, name
            assert doc["files"][0]["action"] == "refused" and why in doc["files"][0]["reason"]
            assert (user / "neuron-2.34.toml").read_text() == good
            assert sorted(p.name for p in user.iterdir()) == ["neuron-2.34.toml"]
        code, doc, _ = update(user, "--from", pin("huge.toml"))
        assert code == 2 and "larger than" in doc["error"]["message"]
        code, doc, _ = update(user, "--from", pin("older-release.toml"), "--allow-older")
        assert code == 0 and (user / "neuron-2.32.9.toml").exists()
        code, doc, _ = update(user, "--from", pin("newer-revision.toml"))
        assert code == 0 and doc["files"][0]["action"] == "replace"
        assert "2026-12-15" in (user / "neuron-2.34.toml").read_text()


def _manifest(entries: list[tuple[str, str]]) -> str:
    return json.dumps({"schema": "neuron-env.matrix-manifest/1",
                       "matrices": [{"url": u, "sha256": h} for u, h in entries]})


def test_https_manifest_with_ca_bundle(tmp_path: Path,
                                       tls: tuple[ssl.SSLContext, Path]) -> None:
    ctx, ca = tls
    site, user = tmp_path / "site", tmp_path / "user"
    (site / "m").mkdir(parents=True)
    a, b = matrix("2.34"), matrix("2.35", "2027-01-10")
    (site / "m" / "neuron-2.34.toml").write_text(a)
    (site / "m" / "b.toml").write_text(b)
    (site / "m" / "index.json").write_text(_manifest([("neuron-2.34.toml", digest(a)),
                                                      ("b.toml", digest(b))]))
    (site / "m" / "bad.json").write_text(_manifest([("neuron-2.34.toml", digest(a)),
                                                    ("b.toml", digest(a))]))
    with serve(site, ctx) as url:
        # the CA is not trusted by default: refused, with a hint at --ca-bundle
        res = run_cli("matrix", "update", "--from", f"{url}/m/index.json",
                      env=cli_env(NEURON_ENV_MATRIX_DIR=str(user)))
        assert res.returncode == 2 and "--ca-bundle" in res.stderr and not user.exists()
        # one file of the manifest does not match its pin: nothing at all is written
        code, doc, _ = update(user, "--from", f"{url}/m/bad.json", "--ca-bundle", str(ca))
        assert code == 2 and "does not match" in doc["error"]["message"]
        assert not user.exists()
        code, doc, _ = update(user, "--from", f"{url}/m/index.json", "--ca-bundle", str(ca))
        assert code == 0 and [f["release"] for f in doc["files"]] == ["2.34", "2.35"]
        assert (user / "neuron-2.35.toml").read_text() == b
        # SSL_CERT_FILE works as well (the system's way of naming a CA bundle)
        code, doc, _ = update(user, "--from", f"{url}/m/index.json",
                              env=cli_env(SSL_CERT_FILE=str(ca)))
        assert code == 0 and {f["action"] for f in doc["files"]} == {"unchanged"}
    assert doctor_matrix(user)[0]["release"] == "2.35"


def test_s3_manifest_via_moto(moto_url: str, tmp_path: Path) -> None:
    s3 = boto("s3", moto_url)
    s3.create_bucket(Bucket="matrices")
    a = matrix("2.34")
    s3.put_object(Bucket="matrices", Key="neuron/neuron-2.34.toml", Body=a.encode())
    s3.put_object(Bucket="matrices", Key="neuron/index.json",
                  Body=_manifest([("neuron-2.34.toml", digest(a))]).encode())
    user = tmp_path / "user"
    code, doc, _ = update(user, "--from", "s3://matrices/neuron/index.json",
                          env=aws_env(moto_url))
    assert code == 0 and doc["files"][0]["url"] == "s3://matrices/neuron/neuron-2.34.toml"
    assert (user / "neuron-2.34.toml").read_text() == a
    code, doc, _ = update(user, "--from", "s3://matrices/neuron/missing.json",
                          env=aws_env(moto_url))
    assert code == 2 and "NoSuchKey" in doc["error"]["message"]


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        code, doc, _ = update(tmp_path / "u", "--from",
                              f"http://127.0.0.1:{port}/x.toml#sha256={'0' * 64}",
                              "--timeout", "1")
    assert code == 4 and "no answer within 1 s" in doc["error"]["message"]


def test_an_s3_endpoint_that_trickles_times_out(tmp_path: Path) -> None:
    """One byte every 0.5 s never trips botocore's per-recv read timeout: --timeout bounds the
    whole S3 read (issue #25)."""
    from tests.helpers.servers import S3

    key = "neuron/neuron-2.34.toml"
    with S3({"matrices": {key: matrix("2.34").encode()}}, trickle=frozenset({key})) as s3:
        code, doc, _ = update(tmp_path / "u", "--from",
                              f"s3://matrices/{key}#sha256={'0' * 64}", "--timeout", "2",
                              env=aws_env(s3.url), timeout=30)
    assert code == 4 and "no answer within 2 s" in doc["error"]["message"], doc


def published(tmp_path: Path) -> tuple[Path, Path, str]:
    """(site with neuron-2.34.toml and its index.json manifest, the user directory, the text)."""
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    a = matrix("2.34")
    (site / "neuron-2.34.toml").write_text(a)
    (site / "index.json").write_text(_manifest([("neuron-2.34.toml", digest(a))]))
    return site, user, a


def test_docs_snippet(tmp_path: Path, tls: tuple[ssl.SSLContext, Path]) -> None:
    """docs/integrations.md's commands, with the example host swapped for a loopback https one
    (an unpinned manifest must come over https) and its CA for the example's."""
    ctx, ca = tls
    site, user, a = published(tmp_path)
    lines = [ln for ln in snippet("matrix-update").splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert len(lines) >= 2
    with serve(site, ctx) as url:
        for line in lines:
            words = line.replace("https://matrices.example.com", url).replace(
                "$(sha256sum neuron-2.34.toml | cut -d' ' -f1)", digest(a)).replace(
                "/etc/pki/matrices-ca.pem", str(ca)).split()
            assert words[:3] == ["neuron-env", "matrix", "update"], line
            words = [w.strip("'\"") for w in words]
            if "--ca-bundle" not in words:
                words += ["--ca-bundle", str(ca)]
            code, doc, _ = update(user, *words[3:])
            assert code == 0, (line, doc)
    assert (user / "neuron-2.34.toml").read_text() == a


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_signed_manifest(tmp_path: Path) -> None:
    """--manifest-key: `<manifest>.sig` must verify (openssl) with the given public key (an
    ECDSA one here; the documented Ed25519 steps: test_matrix_signing_docs.py)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "pub.pem"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    a = matrix("2.34")
    (site / "neuron-2.34.toml").write_text(a)
    manifest = _manifest([("neuron-2.34.toml", digest(a))]).encode()
    (site / "index.json").write_bytes(manifest)
    (site / "forged.json").write_bytes(manifest)
    (site / "forged.json.sig").write_bytes(other.sign(manifest, ec.ECDSA(hashes.SHA256())))
    (site / "tampered.json").write_bytes(manifest.replace(b"]}", b'], "x": 1}'))
    sig = key.sign(manifest, ec.ECDSA(hashes.SHA256()))
    (site / "tampered.json.sig").write_bytes(sig)
    (site / "b64.json").write_bytes(manifest)
    (site / "b64.json.sig").write_bytes(base64.b64encode(sig) + b"\n")  # base64 text works
    (site / "index.json.sig").write_bytes(sig)  # ECDSA as `openssl dgst -sha256 -sign` makes
    with serve(site) as url:
        for name, why in (("forged.json", "does not verify"), ("tampered.json",
                                                                 "does not verify"),
                          ("neuron-2.34.toml", "checks a manifest")):
            code, doc, _ = update(user, "--from", f"{url}/{name}", "--manifest-key", str(pub))
            assert code == 2 and why in doc["error"]["message"], doc
            assert not user.exists()
        code, doc, _ = update(user, "--from", f"{url}/index.json", "--manifest-key", str(pub))
        assert code == 0 and doc["signed"] is True and doc["files"][0]["action"] == "install"
        code, doc, _ = update(user, "--from", f"{url}/b64.json", "--manifest-key", str(pub))
        assert code == 0 and doc["files"][0]["action"] == "unchanged"
