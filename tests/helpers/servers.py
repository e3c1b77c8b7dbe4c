"""Real loopback servers for tests: a fake IMDS with its faults."""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class IMDS:
    """IMDSv2 on 127.0.0.1. mode: ok, v1only (401 on token), 404, garbage, huge, hang, slow,
    trickle (every answer, the token's too, one byte every 0.3 s: no single recv times out)."""

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
                for i in range(len(raw)):
                    if outer._stop.wait(0.3):
                        return
                    try:
                        self.wfile.write(raw[i:i + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: what a deadline does
                        return

            def do_PUT(self):
                outer.requests.append(("PUT", self.path, dict(self.headers)))
                if outer.mode == "hang":
                    return self._hang()
                if outer.mode == "v1only":
                    return self._send(401, b"")
                if outer.mode == "trickle":
                    return self._trickle(b"AQAEAtoken==")
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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self) -> IMDS:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
