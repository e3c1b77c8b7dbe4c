"""`matrix update` against a hostile manifest server (issue #36, findings 7-10): a whole-body
deadline, https or a pin, the manifest's own host only, no rollback or replay by a respelled
release or a same-date revision, and bad URLs or deep JSON as clear exit-2 errors."""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.helpers.cli import cli_env, run_cli
from tests.integration.test_matrix_update import (
    _manifest,
    digest,
    matrix,
    serve,
    serve_handler,
    tls,
    update,
)

pytestmark = pytest.mark.integration
__all__ = ["tls"]  # the module's fixture, used here too


@contextlib.contextmanager
def trickle(body: bytes, every: float = 0.5) -> Iterator[str]:
    """Headers at once, then the body one byte every `every` s: no single recv waits long."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(body)):
                if stop.wait(every):
                    return
                try:
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                except OSError:
                    return

    try:
        with serve_handler(Handler) as url:
            yield url
    finally:
        stop.set()


def test_a_trickling_http_body_ends_at_the_deadline(tmp_path: Path) -> None:
    body = matrix("2.34").encode()
    with trickle(body) as url:
        code, doc, _ = update(tmp_path / "u", "--from", f"{url}/neuron-2.34.toml#sha256="
                              f"{digest(body)}", "--timeout", "2", timeout=60)
    assert code == 4 and "no answer within 2 s" in doc["error"]["message"], doc
    assert not (tmp_path / "u").exists()


def test_plain_http_manifest_needs_a_pin_or_a_signature(tmp_path: Path) -> None:
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    a = matrix("2.34")
    (site / "neuron-2.34.toml").write_text(a)
    index = _manifest([("neuron-2.34.toml", digest(a))])
    (site / "index.json").write_text(index)
    with serve(site) as url:
        code, doc, _ = update(user, "--from", f"{url}/index.json")
        assert code == 2 and "plain http" in doc["error"]["message"], doc
        assert not user.exists()
        code, doc, _ = update(user, "--from", f"{url}/index.json#sha256={digest(index)}")
        assert code == 0 and doc["files"][0]["action"] == "install", doc


def _redirecting(target: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
    return Handler


def test_manifest_entries_stay_on_the_manifests_host(
        tmp_path: Path, tls: tuple[ssl.SSLContext, Path]) -> None:
    ctx, ca = tls
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    local = tmp_path / "neuron-2.34.toml"
    a = matrix("2.34")
    local.write_text(a)
    (site / "neuron-2.34.toml").write_text(a)
    with serve(site, ctx) as url:
        other = url.replace("127.0.0.1", "localhost")
        for name, ref in (("file.json", local.as_uri()), ("abs-file.json", "file:///etc/hostname"),
                          ("other-host.json", f"{other}/neuron-2.34.toml"),
                          ("scheme-relative.json", "//localhost/neuron-2.34.toml"),
                          ("plain.json", url.replace("https:", "http:") + "/neuron-2.34.toml")):
            (site / name).write_text(_manifest([(ref, digest(a))]))
            code, doc, _ = update(user, "--from", f"{url}/{name}", "--ca-bundle", str(ca))
            assert code == 2 and "the manifest's own host" in doc["error"]["message"], (name, doc)
            assert not user.exists()
    # a redirect to another host is refused too (the pin would hold, the rule is the same)
    with serve_handler(_redirecting("http://localhost:9/x.toml")) as url:
        code, doc, _ = update(user, "--from", f"{url}/m.toml#sha256={digest(a)}")
    assert code == 2 and "redirect" in doc["error"]["message"], doc


def test_no_rollback_or_replay_by_respelling_or_same_date(tmp_path: Path) -> None:
    """2.90: a release no bundled matrix has (2.33 is the bundled one respelled below)."""
    site, user = tmp_path / "site", tmp_path / "user"
    site.mkdir()
    good = matrix("2.90", "2026-12-01")
    files = {"good.toml": good,
             "respelled-older.toml": matrix("2.90.0", "2026-11-01"),
             "respelled-same-date.toml": matrix("2.90.0", "2026-12-01") + "\n# same date\n",
             "same-date.toml": good + "\n# another text, same date\n",
             "bundled-respelled.toml": matrix("2.33.0", "2026-10-01"),
             "newer.toml": matrix("2.90.0", "2026-12-15")}
    for name, text in files.items():
        (site / name).write_text(text)
    with serve(site) as url:
        def pin(name: str) -> str:
            return f"{url}/{name}#sha256={digest(files[name])}"

        assert update(user, "--from", pin("good.toml"))[0] == 0
        for name, why in (("respelled-older.toml", "older revision of Neuron 2.90"),
                          ("respelled-same-date.toml", "same date"),
                          ("same-date.toml", "same date"),
                          ("bundled-respelled.toml", "older revision of Neuron 2.33")):
            code, doc, _ = update(user, "--from", pin(name), "--allow-older")
            assert code == 2 and why in doc["files"][0]["reason"], (name, doc)
            assert sorted(p.name for p in user.iterdir()) == ["neuron-2.90.toml"], name
            assert (user / "neuron-2.90.toml").read_text() == good
        code, doc, _ = update(user, "--from", pin("newer.toml"))
        assert code == 0 and doc["files"][0]["action"] == "replace", doc
    # the newer revision replaced the file of that release: one 2.34, never two
    assert sorted(p.name for p in user.iterdir()) == ["neuron-2.90.toml"]
    assert "2026-12-15" in (user / "neuron-2.90.toml").read_text()


@pytest.mark.parametrize("url", [
    "http://u:s3cr3t@127.0.0.1:abc/index.json",
    "https://u:s3cr3t@127.0.0.1/a b.json",
    "http://u:s3cr3t@[::1/index.json",
    "https://u:s3cr3t@[zz::1]/index.json",
    "https://u:s3cr3t@127.0.0.1:99999/index.json",
])
def test_an_invalid_url_is_a_clear_exit_2(url: str, tmp_path: Path) -> None:
    res = run_cli("matrix", "update", "--from", url,
                  env=cli_env(NEURON_ENV_MATRIX_DIR=str(tmp_path / "u")))
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "s3cr3t" not in res.stderr + res.stdout
    assert "not a valid URL" in res.stderr, res.stderr


def test_a_deeply_nested_manifest_is_a_clear_exit_2(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema": "neuron-env.matrix-manifest/1", "matrices": '
                    + "[" * 200000 + "]" * 200000 + "}")
    code, doc, _ = update(tmp_path / "u", "--from", deep.as_uri())
    assert code == 2 and "nested" in doc["error"]["message"], doc


def test_an_s3_manifest_lists_its_own_bucket_only(moto_url: str, tmp_path: Path) -> None:
    from tests.helpers.aws import aws_env, boto

    s3 = boto("s3", moto_url)
    a = matrix("2.34")
    for bucket in ("matrices", "elsewhere"):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="neuron/neuron-2.34.toml", Body=a.encode())
    s3.put_object(Bucket="matrices", Key="neuron/index.json", Body=_manifest(
        [("s3://elsewhere/neuron/neuron-2.34.toml", digest(a))]).encode())
    user = tmp_path / "user"
    code, doc, _ = update(user, "--from", "s3://matrices/neuron/index.json",
                          env=aws_env(moto_url))
    assert code == 2 and "the manifest's own host" in doc["error"]["message"], doc
    assert not user.exists()


def test_ca_bundle_must_be_a_file_and_needs_https(tmp_path: Path) -> None:
    """A FIFO as --ca-bundle is refused at once (never read); with an http URL it would be
    silently ignored: refused."""
    import os

    fifo = tmp_path / "ca.fifo"
    os.mkfifo(fifo)
    pinned = f"#sha256={'0' * 64}"
    code, doc, _ = update(tmp_path / "u", "--from", f"https://127.0.0.1:9/m.toml{pinned}",
                          "--ca-bundle", str(fifo), timeout=30)
    assert code == 2 and "not a regular file" in doc["error"]["message"], doc
    code, doc, _ = update(tmp_path / "u", "--from", f"http://127.0.0.1:9/m.toml{pinned}",
                          "--ca-bundle", str(tmp_path), timeout=30)
    assert code == 2 and "only https:// uses a CA bundle" in doc["error"]["message"], doc
