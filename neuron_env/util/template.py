"""The ONE renderer for values that neuron-env writes into a script or a YAML document it prints
(user data, the Image Builder component, the Slurm health check and its slurm.conf lines, the
Kubernetes NPD plugin, `--print-launch` command lines). docs/security.md, "Rendered scripts".

- `value`: every rendered value is checked once: no Unicode control (Cc: NUL..US, DEL, the C1
  set with U+0085 NEL), no line or paragraph separator (Zl U+2028, Zp U+2029), no lone
  surrogate, no BOM (U+FEFF) or non-character U+FFFE/U+FFFF, no bidi override (text shown in
  another order than it runs). Each of them ends a line of a script, a YAML block or a YAML
  document, or hides what runs; the refusal names the option (UsageError, exit 2).
- `fill`: every `@@NAME@@` of a template replaced in ONE pass: a value that holds another
  `@@NAME@@` is never expanded again (it stays literal text).
- `sh` / `sh_join`: shell quoting wherever a shell reads the value; `Raw` marks the one kind of
  word left unquoted, an expansion neuron-env wrote itself (`"${RUN_DIR}"`).
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path

from neuron_env.errors import UsageError

PLACEHOLDER = re.compile(r"@@([A-Z_]+)@@")
# besides the categories: the BOM, the two non-characters YAML cannot hold, the bidi controls
_REFUSED_CHARS = frozenset("\ufeff\ufffe\uffff\u202a\u202b\u202c\u202d\u202e"
                           "\u2066\u2067\u2068\u2069")
_REFUSED_CATEGORIES = frozenset(("Cc", "Cs", "Zl", "Zp"))


def bad_char(v: str) -> str | None:
    """The first character of v that no rendered value may hold, or None."""
    for c in v:
        if c in _REFUSED_CHARS or unicodedata.category(c) in _REFUSED_CATEGORIES:
            return c
    return None


def value(flag: str, v: str) -> str:
    """v, checked for one line of a script or a YAML scalar (see the module doc), or a
    UsageError (exit 2) that names the option and the character."""
    c = bad_char(v)
    if c is not None:
        raise UsageError(
            f"{flag} {v!r} contains U+{ord(c):04X} ({unicodedata.name(c, 'a control character')})"
            ": a line break or control character in a rendered script or YAML document",
            hint=f"pass {flag} on one line, without control characters, line separators "
                 "(U+0085, U+2028, U+2029) or U+FEFF")
    return v


def values(pairs: Iterable[tuple[str, str | None]]) -> None:
    """`value` for each (option, value) pair (None: not given)."""
    for flag, v in pairs:
        if v is not None:
            value(flag, v)


def words(flag: str, v: str) -> list[str]:
    """Extra arguments (`--doctor-args '--skip "a b"'`) split as the shell would, each checked."""
    try:
        out = shlex.split(value(flag, v or ""))
    except ValueError as e:
        raise UsageError(f"{flag} {v!r} cannot be split into arguments ({e})",
                         hint=f"balance the quotes, e.g. {flag} \"--skip 'a b'\"") from None
    return out


def sh(v: str) -> str:
    """v as one shell word."""
    return shlex.quote(v)


class Raw(str):
    """A word `sh_join` leaves as it is: a shell expansion neuron-env itself wrote."""


def sh_join(argv: Iterable[str]) -> str:
    """A command line whose every word the shell reads back as the word given (`Raw` ones
    excepted): what `shlex.split` and bash give back is the argv."""
    return " ".join(w if isinstance(w, Raw) else shlex.quote(w) for w in argv)


def fill(template: str | Path, subs: Mapping[str, str]) -> str:
    """The template's text (or the file's) with every @@NAME@@ replaced in ONE pass. A
    placeholder without a value is a bug (KeyError), never left in the output."""
    text = template.read_text() if isinstance(template, Path) else template
    return PLACEHOLDER.sub(lambda m: subs[m.group(1)], text)
