"""The ONE sanitiser for text that leaves the process (a terminal, a JUnit/Markdown document, an
engine's line, a Prometheus label, Slurm's drain reason, a manifest): text from outside (a
host's os-release, a driver version, a dist's METADATA, a fleet node's report, an exception)
gets its control characters, lone surrogates and the non-characters XML forbids shown as
visible `\\xNN` / `\\uNNNN` escapes, so a hostile `\\x1b]0;...` cannot drive a terminal, a
`\\x01` cannot make a JUnit file ill-formed XML and an undecodable name cannot crash an encoder.

Where the text may hold a secret, the order is: mask (guards.redact), then `clean`, then cut."""

from __future__ import annotations

import re

# C0 (but tab and newline), DEL, C1, lone surrogates and U+FFFE/U+FFFF: none of them may reach
# a terminal, XML 1.0 forbids the C0 ones (but tab, LF, CR) and the rest, and a lone surrogate
# cannot be encoded to UTF-8 at all. CR is escaped too: it rewrites a terminal line and YAML,
# Slurm and engines take it for a line break. So are the bidi overrides and isolates (text
# shown in another order than it is, "Trojan Source") and U+2028/U+2029 (line breaks to some).
_OTHER = "\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_OTHER}]")
# the same, with newline (and tab) too: for one-line sinks (a Prometheus label, a drain reason)
_UNSAFE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_OTHER}]")
# the colour codes neuron-env itself writes (SGR: ESC [ digits m), kept when asked
_SGR = r"(\x1b\[[0-9;]{0,8}m)"


def _esc(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean(s: object, keep_sgr: bool = False, one_line: bool = False, raw_ok: str = "") -> str:
    """str(s) safe to show anywhere: every control character but tab and newline (all of them
    with one_line), every lone surrogate and U+FFFE/U+FFFF as a visible escape. keep_sgr: leave
    plain colour codes (ESC [ n m) alone, for a report neuron-env coloured itself; raw_ok:
    characters a tool's artifact must keep (a diff's CR), never ESC."""
    rx = _UNSAFE_LINE if one_line else _UNSAFE
    text = str(s)
    if raw_ok:
        keep = set(raw_ok) - {"\x1b", "\x9b"}

        def esc(m: re.Match[str]) -> str:
            return m.group(0) if m.group(0) in keep else _esc(m)
    else:
        esc = _esc
    if not keep_sgr:
        return rx.sub(esc, text)
    return "".join(p if i % 2 else rx.sub(esc, p) for i, p in enumerate(re.split(_SGR, text)))


def field(s: object) -> str:
    """One value inside a line of a text view (a file name, a reason, a node name): EVERY
    control character escaped, newline and tab too, so a value never forges another line.
    Every text view puts outside values through this (scan, fleet)."""
    return clean(s, one_line=True)


def escape_controls(s: str, keep_sgr: bool = False) -> str:
    """The old name of `clean` (host probes use it)."""
    return clean(s, keep_sgr=keep_sgr)


def xml_safe(s: str) -> str:
    """s well-formed inside an XML 1.0 document: `clean` escapes all XML forbids."""
    return clean(s)


def cut(text: str, limit: int) -> str:
    """`text` at most `limit` characters, cut at a word boundary with "…" (a summary never
    ends mid-word: "its unsupp"); only a word longer than half the room is cut inside."""
    if len(text) <= limit:
        return text
    if limit < 2:
        return text[:limit]
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"
