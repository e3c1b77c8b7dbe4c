"""Text from outside (a host's os-release, DMI, an installer's output) made safe for where it is
shown: control characters become visible `\\xNN` escapes, so a hostile `\\x1b]0;...` cannot
drive the terminal and a `\\x01` cannot make a JUnit file ill-formed XML."""

from __future__ import annotations

import re

# C0 (but tab and newline), DEL and C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# what XML 1.0 forbids outright (tab, newline and carriage return are allowed); compiled on
# first use (re's cache), as _SGR: ~1 ms at import, and most runs write no XML
_NOT_XML = r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]"
# the colour codes neuron-env itself writes (SGR: ESC [ digits m), kept when asked
_SGR = r"(\x1b\[[0-9;]{0,8}m)"


def _esc(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_controls(s: str, keep_sgr: bool = False) -> str:
    """s with every control character but tab and newline shown as \\xNN. keep_sgr: leave
    plain colour codes (ESC [ n m) alone, for a report neuron-env coloured itself."""
    if not keep_sgr:
        return _CONTROL.sub(_esc, s)
    return "".join(p if i % 2 else _CONTROL.sub(_esc, p) for i, p in enumerate(re.split(_SGR, s)))


def xml_safe(s: str) -> str:
    """s with the characters XML 1.0 forbids shown as \\xNN (a well-formed document)."""
    return re.sub(_NOT_XML, _esc, s)
