"""Small real wheels and PEP 503 indexes for install tests (stand-ins for the Neuron packages)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import re
import threading
import time
import zipfile
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Stand:
    name: str
    version: str
    requires: tuple[str, ...] = ()
    body: str = ""  # the module's __init__.py
    corrupt: bool = False  # a zip member whose CRC is wrong: the install fails midway
    extra_files: dict[str, str] = field(default_factory=dict)


def build_wheel(out: Path, s: Stand) -> Path:
    """Write `name-version-py3-none-any.whl` with METADATA, WHEEL and RECORD."""
    dist = re.sub(r"[-_.]+", "_", s.name)
    mod = dist.lower()
    info = f"{dist}-{s.version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {s.name}", f"Version: {s.version}"]
    meta += [f"Requires-Dist: {r}" for r in s.requires]
    files = {f"{mod}/__init__.py": s.body or f"__version__ = {s.version!r}\n",
             **s.extra_files,
             f"{info}/METADATA": "\n".join(meta) + "\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: neuron-env-tests\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    whl = out / f"{dist}-{s.version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_STORED) as z:
        for path, text in files.items():
            z.writestr(path, text)
    if s.corrupt:  # flip a byte inside the first member's data: CRC check fails on extraction
        data = bytearray(whl.read_bytes())
        first = files[f"{mod}/__init__.py"].encode()
        at = data.find(first)
        data[at] ^= 0x01
        whl.write_bytes(bytes(data))
    return whl


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_index(root: Path, stands: list[Stand], hashes: bool = True) -> Path:
    """A static PEP 503 index: root/simple/<name>/index.html -> ../../files/<wheel>."""
    files = root / "files"
    by_name: dict[str, list[Path]] = {}
    for s in stands:
        by_name.setdefault(_norm(s.name), []).append(build_wheel(files, s))
    simple = root / "simple"
    simple.mkdir(parents=True, exist_ok=True)
    links = []
    for name, wheels in by_name.items():
        d = simple / name
        d.mkdir(exist_ok=True)
        rows = []
        for w in wheels:
            frag = f"#sha256={sha256(w)}" if hashes else ""
            rows.append(f'<a href="../../files/{html.escape(w.name)}{frag}">'
                        f'{html.escape(w.name)}</a><br/>')
        (d / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(rows)
                                      + "\n</body></html>\n")
        links.append(f'<a href="{name}/">{name}</a><br/>')
    (simple / "index.html").write_text("<html><body>\n" + "\n".join(links) + "\n</body></html>")
    return simple


class IndexServer:
    """Serve a directory over HTTP on 127.0.0.1. mode: ok, slow (delay per request), garbage
    (every page is binary junk), error (500). auth=(user, password): HTTP basic auth, as an
    enterprise mirror asks (401 without it). rate: bytes/s for the files served, except the
    first `free` requests of each (pip resolves from a wheel it downloads, then downloads it
    again to install: free=1 slows the install's download only)."""

    def __init__(self, directory: Path, mode: str = "ok", delay: float = 0.0,
                 auth: tuple[str, str] | None = None, rate: float | None = None,
                 free: int = 0) -> None:
        self.mode, self.delay, self.requests, self.refused = mode, delay, [], 0
        self.rate, self.free = rate, free
        import base64

        want = "Basic " + base64.b64encode(":".join(auth).encode()).decode() if auth else None
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(directory), **kw)

            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                if want and self.headers.get("Authorization") != want:
                    outer.refused += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="mirror"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.mode in ("garbage", "error"):
                    body = b"\x00\xff\xfe<<garbage>>" * 50 if outer.mode == "garbage" else b""
                    self.send_response(200 if outer.mode == "garbage" else 500)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(body)
                    return None
                return super().do_GET()

            def copyfile(self, source, outputfile):
                if not outer.rate or outer.requests.count(self.path) <= outer.free:
                    return super().copyfile(source, outputfile)
                while chunk := source.read(16384):
                    outputfile.write(chunk)
                    outputfile.flush()
                    time.sleep(len(chunk) / outer.rate)
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/simple"

    def __enter__(self) -> IndexServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def refused_url() -> str:
    """An http URL on loopback where nothing listens (connection refused)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/simple"
