"""Credentials embedded in URLs (https://user:token@mirror/...) never reach a report, a log or
the install manifest: every place neuron-env writes text passes it through here."""

from __future__ import annotations

import re

# userinfo between "scheme://" and the LAST "@" before the path (no "/" or whitespace in
# between): user, user:password, and passwords that hold a raw @ ' " or : themselves. A quote
# that closes a JSON string (followed by , : } ]) ends the URL.
_USERINFO = re.compile(r"(?<=://)(?:\\[\"']|(?![\"'][,:}\]\s])[^/\s<>])+@")
MASK = "***@"


def text(s: str) -> str:
    return _USERINFO.sub(MASK, s) if "@" in s else s


def value(v):
    """The same, through a JSON-like value (dicts, lists, strings)."""
    if isinstance(v, str):
        return text(v)
    if isinstance(v, dict):
        return {k: value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [value(x) for x in v]
    return v
