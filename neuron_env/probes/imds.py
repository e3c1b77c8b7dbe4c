"""IMDSv2 (token PUT, then GET), bounded by one deadline; IMDSv1 only where the token is refused."""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from neuron_env.errors import ImdsFailure as _Fail
from neuron_env.util.names import INSTANCE_TYPE
from neuron_env.util.record import record

if TYPE_CHECKING:
    import socket
    import threading

DEFAULT_ENDPOINT = "http://169.254.169.254/"
ENDPOINT_ENV = "AWS_EC2_METADATA_SERVICE_ENDPOINT"
DISABLED_ENV = "AWS_EC2_METADATA_DISABLED"
MAX_BODY = 4096
_TYPE = INSTANCE_TYPE
_ID = re.compile(r"^i-[0-9a-f]{8,17}$")
# a token goes back in a header: visible ASCII only (a CR LF in it would forge a header, and
# http.client refuses it with a ValueError)
_TOKEN = re.compile(r"[\x21-\x7e]{1,256}")


@record
class IMDSAnswer:
    value: str | None
    error: str | None = None
    version: str | None = None  # "v2" or "v1"
    elapsed: float = 0.0


def disabled() -> bool:
    return os.environ.get(DISABLED_ENV, "").strip().lower() == "true"


def endpoint() -> str:
    return os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT


def _request(url: str, method: str, path: str, headers: dict, deadline: float):
    import http.client  # only when IMDS is really asked: it pulls ssl (~10 ms)

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _Fail(f"bad IMDS endpoint {url!r} (from {ENDPOINT_ENV})")
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Fail("timed out")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=left)
    cut = None
    try:
        base = parts.path.rstrip("/")
        conn.connect()
        # a socket timeout bounds each recv, not the exchange: an endpoint that trickles one
        # byte every 0.3 s would never trip it. At the deadline the socket is shut down, which
        # ends whatever read is under way.
        cut = _cut_at(deadline, conn.sock)
        conn.request(method, base + path, headers=headers)
        conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
        resp = conn.getresponse()
        body = resp.read(MAX_BODY + 1)
        if time.monotonic() >= deadline:
            raise _Fail("timed out")
        return resp.status, body
    except TimeoutError:
        raise _Fail("timed out") from None
    except (OSError, http.client.HTTPException, ValueError) as e:  # ValueError: a bad header
        if time.monotonic() >= deadline:
            raise _Fail("timed out") from None
        raise _Fail(f"{type(e).__name__}: {e}") from None
    finally:
        if cut is not None:
            cut.cancel()
        conn.close()


def _cut_at(deadline: float, sock: socket.socket) -> threading.Timer:
    """A timer that shuts `sock` down at `deadline` (the whole exchange's budget)."""
    import contextlib
    import socket
    import threading

    def cut() -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    t = threading.Timer(max(0.0, deadline - time.monotonic()), cut)
    t.daemon = True
    t.start()
    return t


def query(path: str, budget: float = 1.0, check=_TYPE) -> IMDSAnswer:
    """GET /latest/meta-data/<path>, all within `budget` seconds."""
    start = time.monotonic()
    deadline = start + budget
    url = endpoint()
    token, version = None, "v2"
    try:
        status, body = _request(url, "PUT", "/latest/api/token",
                                {"X-aws-ec2-metadata-token-ttl-seconds": "21600"}, deadline)
        if status == 200 and 0 < len(body) <= 256:
            token = body.decode("ascii", "replace").strip()
            if not _TOKEN.fullmatch(token):
                return IMDSAnswer(None, f"IMDS at {url}: the token is not valid (not one "
                                  "word of visible ASCII)", "v2", time.monotonic() - start)
        elif status in (401, 403, 404, 405):
            version = "v1"  # IMDSv1-only endpoint (or a proxy that refuses PUT)
        else:
            return IMDSAnswer(None, f"token request answered HTTP {status}", "v2",
                              time.monotonic() - start)
        headers = {"X-aws-ec2-metadata-token": token} if token else {}
        status, body = _request(url, "GET", f"/latest/meta-data/{path}", headers, deadline)
    except _Fail as e:
        return IMDSAnswer(None, f"IMDS at {url}: {e}", version, time.monotonic() - start)
    elapsed = time.monotonic() - start
    if status != 200:
        return IMDSAnswer(None, f"IMDS {path} answered HTTP {status}", version, elapsed)
    if len(body) > 256:
        size = f"over {MAX_BODY}" if len(body) > MAX_BODY else str(len(body))
        return IMDSAnswer(None, f"IMDS {path} answer is {size} bytes: not a valid {path}",
                          version, elapsed)
    text = body.decode("utf-8", "replace").strip()
    if not check.match(text):
        return IMDSAnswer(None, f"IMDS {path} answer {text[:40]!r} is not valid", version, elapsed)
    return IMDSAnswer(text, None, version, elapsed)


def instance_id(budget: float = 1.0) -> IMDSAnswer:
    return query("instance-id", budget, _ID)
