"""Credentials embedded in URLs (https://user:token@mirror/...) never reach a report, a log, the
install manifest, an SSM parameter, an EC2 tag, a Slurm drain reason or a bundle: every sink
passes its text through `mask` (one entry point; `text` and `value` are its two halves).
Mask FIRST, then cut to a length: a cut made before masking can leave half a token behind.

The userinfo is found by parsing the authority, not with a regex that forbids `/`:
- an `@` before the first `/` after `scheme://`: the userinfo is everything up to the LAST `@`
  of that authority (passwords holding `@`, `:`, quotes or blanks);
- else a password that holds a raw `/` (`http://user:pa/ss@host/simple`): everything up to the
  last `@` of the URL, when a `user:` comes before the first `/` (and what follows the `:` is
  not a port), so `git+https://github.com/a/b@v1.0` keeps its `@ref`.
Where a URL ends: at a line end, at the next `scheme://`, at `<`/`>`, at a quote that closes a
JSON string, and, once an `@` was seen, at the next blank. See docs/security.md ("Secrets").
"""

from __future__ import annotations

import re
from typing import Any, overload

MASK = "***@"
_START = re.compile(r"://")
# where a URL's text ends (searched from just after "://")
_END = re.compile(r"[\n\r<>]|://|(?<!\\)[\"'](?=[,:}\]\s]|$)")


def _userinfo_end(region: str) -> int:
    """Index of the `@` that ends the userinfo in `region` (the text after `://`), or -1."""
    slash = region.find("/")
    head = region if slash < 0 else region[:slash]
    at = head.rfind("@")
    if at < 0:  # no @ in the authority proper: a password holding a raw "/"?
        at = region.rfind("@")
        if at < 0:
            return -1
        colon = region.find(":", 0, slash)
        if colon <= 0 or region[colon + 1:slash].isdigit():  # no user:, or host:port/path@x
            return -1
    user = region[:at]
    if any(c.isspace() for c in user):  # a blank: only inside a password (after "user:")
        colon = user.find(":")
        if colon <= 0 or any(c.isspace() for c in user[:colon]):
            return -1
    return at if at > 0 else -1


def _text(s: str) -> str:
    out, pos = [], 0
    for m in _START.finditer(s):
        start = m.end()
        if start < pos:  # inside a span already masked
            continue
        end = _END.search(s, start)
        region = s[start:end.start() if end else len(s)]
        first_at = region.find("@")
        if first_at >= 0:  # once an @ was seen, a blank ends the URL
            blank = re.search(r"\s", region[first_at:])
            if blank:
                region = region[:first_at + blank.start()]
        at = _userinfo_end(region)
        if at >= 0:
            out.append(s[pos:start])
            out.append(MASK)
            pos = start + at + 1
    out.append(s[pos:])
    return "".join(out)


# secrets outside a URL's userinfo (issue #36): an HTTP Authorization header's credentials, the
# AWS CLI's credentials file keys, and token-like URL query parameters. The name is kept, the
# value becomes ***.
_SECRET = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|digest|negotiate|aws4-hmac-sha256)\s+)?)([^\s'\",;]+)"
    r"|(\b(?:aws_secret_access_key|aws_session_token|aws_security_token|secret_access_key"
    r"|secretaccesskey|sessiontoken)[\"']?\s*[:=]\s*[\"']?)([^\s'\",;]+)"
    r"|([?&;](?:private_token|access_token|auth_token|refresh_token|id_token|token|password"
    r"|passwd|secret|client_secret|api_key|apikey|x-amz-signature|x-amz-security-token"
    r"|x-amz-credential|signature|sig)=)([^&\s'\"#<>]+)")
_HINT = re.compile(r"(?i)authoriz|secret|token|passw|api_?key|x-amz-|sig")


def _secret(m: re.Match[str]) -> str:
    head = m.group(1) or m.group(3) or m.group(5)
    return head + "***"


def text(s: str) -> str:
    """`s` with the userinfo of every URL in it shown as `***@`, and the value of every
    Authorization header, AWS secret key and token query parameter as `***`."""
    if "@" in s:
        s = _text(s)
    return _SECRET.sub(_secret, s) if _hinted(s) else s


_HINTS = ("authoriz", "secret", "token", "passw", "api_key", "apikey", "x-amz-", "sig")
# what re's IGNORECASE also takes for an ASCII letter that str.lower() does not give: dotless
# i, long s, and the dot str.lower() leaves after the i of a dotted capital I
_FOLDS = (("\u0131", "i"), ("\u017f", "s"), ("\u0307", ""))


def _hinted(s: str) -> bool:
    """Whether _HINT matches anywhere in `s` (or more often: a hint is only a hint), found by
    lower-casing and substring search: a case-insensitive alternation scans a 20 MB fleet
    document in seconds, this in milliseconds (#49)."""
    for at in range(0, len(s), _CHUNK):  # a chunk at a time: no lower-case copy of it all
        part = s[at:at + _CHUNK + 16]  # overlapping by more than the longest hint
        low = part.lower()
        if not part.isascii():
            for a, b in _FOLDS:
                if a in low:
                    low = low.replace(a, b)
        if any(h in low for h in _HINTS):
            return True
    return False


_CHUNK = 1 << 20


def value(v: Any) -> Any:
    """The same, through a JSON-like value (dicts, lists, strings)."""
    if isinstance(v, str):
        return text(v)
    if isinstance(v, dict):
        return {k: value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [value(x) for x in v]
    return v


@overload
def mask(v: str) -> str: ...
@overload
def mask(v: Any) -> Any: ...
def mask(v: Any) -> Any:
    """THE entry point for every sink: a string, or a JSON-like value, with credentials in
    URLs masked. Call it before any cut to a length."""
    return value(v)
