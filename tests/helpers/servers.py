"""Real loopback servers for tests: a fake IMDS and a tiny S3 endpoint, with their faults."""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Loopback:
    """A ThreadingHTTPServer on 127.0.0.1 in a daemon thread; `_stop` ends slow answers."""

    _stop: threading.Event
    server: ThreadingHTTPServer

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _drip(self, wfile, data: bytes, every: float) -> None:
        """`data` one byte every `every` s, until the client gives up (what a deadline does)
        or the server stops."""
        for i in range(len(data)):
            if self._stop.wait(every):
                return
            try:
                wfile.write(data[i:i + 1])
                wfile.flush()
            except OSError:
                return

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()


class IMDS(_Loopback):
    """IMDSv2 on 127.0.0.1. mode: ok, v1only (401 on token), 404, garbage, huge, hang, slow,
    trickle (every answer, the token's too, one byte every 0.3 s: no single recv times out),
    crlf-token (a token holding CR LF and a forged header: not a valid header value)."""

    def __init__(self, mode: str = "ok", instance_type: str = "trn2.48xlarge",
                 delay: float = 0.0, instance_id: str = "i-0123456789abcdef0") -> None:
        self.mode, self.instance_type, self.delay = mode, instance_type, delay
        self.instance_id = instance_id
        self.requests: list[tuple[str, str, dict]] = []
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            def _hang(self) -> None:
                outer._stop.wait(10)

            def _trickle(self, body: bytes) -> None:
                raw = (f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
                outer._drip(self.wfile, raw, 0.3)

            def do_PUT(self):
                outer.requests.append(("PUT", self.path, dict(self.headers)))
                if outer.mode == "hang":
                    return self._hang()
                if outer.mode == "v1only":
                    return self._send(401, b"")
                if outer.mode == "trickle":
                    return self._trickle(b"AQAEAtoken==")
                if outer.mode == "crlf-token":
                    return self._send(200, b"AQAE\r\nX-Evil: 1\r\nAtoken==")
                if self.path != "/latest/api/token" or \
                        "X-aws-ec2-metadata-token-ttl-seconds" not in self.headers:
                    return self._send(400, b"")
                self._send(200, b"AQAEAtoken==")

            def do_GET(self):
                outer.requests.append(("GET", self.path, dict(self.headers)))
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.mode != "v1only" and \
                        self.headers.get("X-aws-ec2-metadata-token") != "AQAEAtoken==":
                    return self._send(401, b"")
                if outer.mode == "trickle":
                    return self._trickle(outer.instance_type.encode())
                if outer.mode == "404":
                    return self._send(404, b"<html>404 - Not Found</html>")
                if outer.mode == "garbage":
                    return self._send(200, b"\x00\xff<<not an instance type>>")
                if outer.mode == "huge":
                    return self._send(200, b"x" * (10 * 1024 * 1024))
                if self.path == "/latest/meta-data/instance-type":
                    return self._send(200, outer.instance_type.encode())
                if self.path == "/latest/meta-data/instance-id":
                    return self._send(200, outer.instance_id.encode())
                self._send(404, b"")

        self._serve(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


class S3(_Loopback):
    """A tiny S3-compatible endpoint on 127.0.0.1 (path-style, as botocore addresses a custom
    endpoint): ListObjectsV2 and GetObject over `objects` ({bucket: {key: bytes}}). Keys in
    `trickle` send their headers at once, then the body one byte every `every` s, so that no
    single recv ever waits long enough for a read timeout (moto's server cannot do that)."""

    def __init__(self, objects: dict[str, dict[str, bytes]], trickle: frozenset[str] = frozenset(),
                 every: float = 0.5) -> None:
        from urllib.parse import parse_qs, unquote, urlsplit
        from xml.sax.saxutils import escape

        self.objects, self.trickle, self.every = objects, trickle, every
        self.requests: list[str] = []
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str = "application/xml") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            def _missing(self, what: str) -> None:
                self._send(404, f"<Error><Code>{what}</Code><Message>not here</Message>"
                           "</Error>".encode())

            def do_GET(self):
                outer.requests.append(self.path)
                url = urlsplit(self.path)
                bucket, _, key = unquote(url.path).lstrip("/").partition("/")
                objs = outer.objects.get(bucket)
                if objs is None:
                    return self._missing("NoSuchBucket")
                if not key:  # ListObjectsV2, one page
                    prefix = parse_qs(url.query).get("prefix", [""])[0]
                    keys = sorted(k for k in objs if k.startswith(prefix))
                    rows = "".join(f"<Contents><Key>{escape(k)}</Key><Size>{len(objs[k])}"
                                   "</Size><StorageClass>STANDARD</StorageClass></Contents>"
                                   for k in keys)
                    return self._send(200, (
                        '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns='
                        '"http://s3.amazonaws.com/doc/2006-03-01/">'
                        f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>"
                        f"<KeyCount>{len(keys)}</KeyCount><MaxKeys>1000</MaxKeys>"
                        f"<IsTruncated>false</IsTruncated>{rows}</ListBucketResult>").encode())
                if key not in objs:
                    return self._missing("NoSuchKey")
                body = objs[key]
                if key not in outer.trickle:
                    return self._send(200, body, "application/octet-stream")
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.flush()
                outer._drip(self.wfile, body, outer.every)

        self._serve(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
