"""Network reads with bounds that hold against a hostile server (issue #36): a URL checked
before any I/O (a bad port, a blank, a broken IPv6 literal is a clear exit-2 error with the
credentials masked, never a traceback); one HTTP(S) GET whose WHOLE exchange (connect,
headers, body) ends by a deadline, so a server sending one byte a second cannot keep us; at
most `limit` + 1 bytes; redirects only to the same scheme, host and port; and a JSON depth
limit checked before parsing (a deeply nested document is an error, never a RecursionError).

Merge note: guards/files.py is to become the one bounded reader (size cap, FIFO refusal, depth
limit, deadline); these functions are the network half and belong there once it lands."""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
from typing import Any

from neuron_env.errors import CommandTimeout, ConfigurationError

_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f]")


def shown_url(url: str) -> str:
    """A URL (or a message holding one) as we show it: credentials masked, one line."""
    from neuron_env.guards.redact import mask
    from neuron_env.guards.text import clean

    return clean(mask(url), one_line=True)


def check_url(url: str, *, schemes: tuple[str, ...] = ("https", "http", "file", "s3")
              ) -> urllib.parse.SplitResult:
    """`url` split, when it is well-formed enough to fetch: a known scheme, a host for
    http(s)/s3, a numeric port in range, no blank or control character. Else ConfigurationError
    (exit 2) naming the URL with its credentials masked. Pure: no I/O."""
    hint = "check the URL: percent-encode blanks (%20), a port is a number up to 65535, an " \
           "IPv6 host is written [addr]"
    if _BAD_URL_CHARS.search(url):
        raise ConfigurationError(f"{shown_url(url)!r}: not a valid URL (it holds a blank or a "
                                 "control character)", hint=hint)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError: not a number, or out of range
        host = parts.hostname
        if host and ":" in host:  # an IPv6 literal must be one
            import ipaddress

            ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError as e:
        raise ConfigurationError(f"{shown_url(url)}: not a valid URL ({shown_url(str(e))})",
                                 hint=hint) from None
    if parts.scheme not in schemes:
        raise ConfigurationError(f"{shown_url(url)}: not a valid URL here (scheme "
                                 f"{parts.scheme or 'none'!r}; use {', '.join(schemes)})",
                                 hint=hint)
    if parts.scheme in ("http", "https", "s3") and not host:
        raise ConfigurationError(f"{shown_url(url)}: not a valid URL (no host)", hint=hint)
    del port
    return parts


def origin(url: str) -> tuple[str, str]:
    """(scheme, host[:port]) lower-cased, default ports dropped: what "the same host" means."""
    p = urllib.parse.urlsplit(url)
    host = (p.hostname or "").lower()
    port = p.port
    if port is not None and (p.scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    return p.scheme.lower(), host


def _opener(url: str, ca_bundle: str | None) -> Any:
    """urllib's opener with our TLS context and a redirect handler that follows a redirect
    only to the same scheme, host and port (never a downgrade to http, never another host)."""
    import urllib.request

    home = origin(url)

    class SameOrigin(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                             newurl: str) -> Any:
            target = urllib.parse.urljoin(req.full_url, newurl)
            if origin(target) != home:
                raise ConfigurationError(
                    f"{shown_url(req.full_url)}: a redirect to another host or scheme "
                    f"({shown_url(target)}): refused", hint="point --from at the final URL, on "
                    "the host that serves the files")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    handlers: list[Any] = [SameOrigin()]
    if urllib.parse.urlsplit(url).scheme == "https":
        from neuron_env.guards.files import ssl_context

        # the bundle through the one reader: a FIFO or a device is refused, never opened
        handlers.append(urllib.request.HTTPSHandler(context=ssl_context(ca_bundle)))
    return urllib.request.build_opener(*handlers)


def _cut(resp: Any) -> None:
    """Best effort: shut the socket under an http.client response down, so the read under way
    ends (the worker is a daemon thread, left behind either way)."""
    import contextlib
    import socket

    with contextlib.suppress(Exception):
        resp.fp.raw._sock.shutdown(socket.SHUT_RDWR)


def http_get(url: str, limit: int, *, timeout: float, ca_bundle: str | None = None,
             user_agent: str = "neuron-env") -> bytes:
    """At most `limit` + 1 bytes of `url` (the caller refuses more), the whole exchange within
    `timeout` s: CommandTimeout (exit 4) past it; ConfigurationError (exit 2) for an HTTP
    error status, a TLS or network failure, a redirect elsewhere."""
    import ssl
    import urllib.error
    import urllib.request

    check_url(url, schemes=("https", "http"))
    from neuron_env.guards.files import read_body

    opener = _opener(url, ca_bundle)
    box: dict[str, Any] = {}
    start = time.monotonic()
    end = start + timeout

    def work() -> None:
        try:
            req = urllib.request.Request(url, headers={"User-Agent": user_agent})
            with opener.open(req, timeout=timeout) as resp:
                box["resp"] = resp
                # the one body reader (guards/files): capped, within what is left of the time
                box["value"] = read_body(resp, limit, max(0.001, end - time.monotonic()),
                                         shown_url(url))
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=work, name=f"GET {shown_url(url)}", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        _cut(box.get("resp"))
        raise CommandTimeout(f"{shown_url(url)}: no answer within {timeout:g} s (the whole read: "
                             f"{time.monotonic() - start:.0f} s, not finished)",
                             hint="a slow or stalled server; retry, or raise --timeout")
    err = box.get("error")
    if err is None:
        return bytes(box["value"])
    shown = shown_url(url)
    if isinstance(err, CommandTimeout):  # the body reader's deadline: the same exchange's
        raise CommandTimeout(f"{shown_url(url)}: no answer within {timeout:g} s (the whole "
                             "read, not finished)", hint="a slow or stalled server; retry, or "
                             "raise --timeout") from None
    if isinstance(err, ConfigurationError):
        raise err
    if isinstance(err, urllib.error.HTTPError):
        raise ConfigurationError(f"{shown}: HTTP {err.code} {err.reason}") from None
    if isinstance(err, TimeoutError) or (isinstance(err, urllib.error.URLError)
                                         and isinstance(err.reason, TimeoutError)):
        raise CommandTimeout(f"{shown}: no answer within {timeout:g} s") from None
    if isinstance(err, urllib.error.URLError):
        hint = ("pass the server's CA with --ca-bundle FILE (or SSL_CERT_FILE)"
                if isinstance(err.reason, ssl.SSLError) else "check the URL and the network")
        raise ConfigurationError(f"{shown}: {shown_url(str(err.reason))}", hint=hint) from None
    if isinstance(err, (OSError, ValueError)):  # http.client.InvalidURL, a reset, ...
        raise ConfigurationError(f"{shown}: {shown_url(str(err))}",
                                 hint="check the URL and the network") from None
    raise err
