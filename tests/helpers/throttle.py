"""A loopback HTTP proxy in front of moto that answers the first N calls of chosen AWS
operations with ThrottlingException (HTTP 400), then forwards everything: a real client sees
real throttling and must retry."""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

THROTTLED = b'{"__type":"ThrottlingException","message":"Rate exceeded"}'


class ThrottlingProxy:
    def __init__(self, upstream: str, throttle: dict[str, int]) -> None:
        self.upstream = urlsplit(upstream)
        self.left = dict(throttle)  # operation (X-Amz-Target suffix) -> throttles left
        self.seen: Counter[str] = Counter()
        self.throttled: Counter[str] = Counter()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                outer._handle(self)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        op = (h.headers.get("X-Amz-Target") or "").rpartition(".")[2]
        with self._lock:
            self.seen[op] += 1
            throttle = self.left.get(op, 0) > 0
            if throttle:
                self.left[op] -= 1
                self.throttled[op] += 1
        if throttle:
            return self._reply(h, 400, {"Content-Type": "application/x-amz-json-1.1"}, THROTTLED)
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=30)
        headers = {k: v for k, v in h.headers.items() if k.lower() != "host"}
        conn.request(h.command, h.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        skip = ("transfer-encoding", "content-length", "connection")
        self._reply(h, resp.status, {k: v for k, v in resp.getheaders()
                                     if k.lower() not in skip}, data)
        conn.close()

    @staticmethod
    def _reply(h: BaseHTTPRequestHandler, code: int, headers: dict, data: bytes) -> None:
        h.send_response(code)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def __enter__(self) -> ThrottlingProxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
