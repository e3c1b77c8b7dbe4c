"""Fit a text view to a terminal: each line wrapped at word boundaries to the width, with a
hanging indent under its bullet (`✓ `, `[!] `, `fix: `, `1. `), never a word split; a line the
view marked as a shell command (CMD) is never word-wrapped: where it is wider than the terminal
it is cut at top-level `&&` and between arguments into `\\`-continued lines that paste into a
shell as the same command. Without a width (piped output), each item stays one line.

Pure: str -> str. Colour codes (ESC [ n m) take no columns."""

from __future__ import annotations

import re

CMD = "\ue000"  # marks a line (after its indent) as a shell command; never shown
_SGR = re.compile(r"\x1b\[[0-9;]{0,8}m")
# the bullet a continuation hangs under: `[✓] `, `✓ `, `- `, `1. `, `fix: `, `observed: `
_BULLET = re.compile(r"^( *)((?:\[[^\]\s]{1,12}\]|->|[✓✗!+x*•-]|\d{1,3}\.|[A-Za-z][\w .-]{0,20}:)"
                     r" +)?")
CONTINUE = "  "  # how much deeper a command's continuation lines sit


def visible(s: str) -> int:
    """Columns `s` takes on a terminal (colour codes take none)."""
    return len(_SGR.sub("", s))


def fit(text: str, width: int | None) -> str:
    """`text` with every line fitted to `width` columns (None: unchanged, markers removed)."""
    out = []
    for line in text.split("\n"):
        if CMD in line:
            indent, _, cmd = line.partition(CMD)
            out += command_lines(cmd, indent, width) if width else [indent + cmd]
        elif width and visible(line) > width:
            out += wrap_line(line, width)
        else:
            out.append(line)
    return "\n".join(out)


def wrap_line(line: str, width: int) -> list[str]:
    """One line wrapped at spaces, continuations indented under the text after its bullet
    (on a narrow terminal, under the bullet itself where 20 columns would not be left)."""
    plain = _SGR.sub("", line)
    m = _BULLET.match(plain)
    lead, hang = (len(m.group(1)), len(m.group(0))) if m else (0, 0)
    if width - hang < 20:
        hang = lead if width - lead >= 20 else 0
    lines, cur, fresh = [], line[:lead], True
    for w in _words(line[lead:]):
        if fresh:
            cur, fresh = cur + w, not w
        elif visible(cur) + 1 + visible(w) <= width or visible(w) > width - hang:
            cur = f"{cur} {w}"  # (a word no line can hold: no pointless break before it)
        else:
            lines.append(cur.rstrip(" "))
            cur, fresh = " " * hang + w, not w
    lines.append(cur)
    return lines


def _words(text: str) -> list[str]:
    """Words at spaces, but a `quoted command` in the prose stays one word (never cut)."""
    if text.count("`") % 2:
        return text.split(" ")
    out: list[str] = []
    for i, part in enumerate(text.split("`")):
        if i % 2:  # inside backticks
            out[-1:] = [f"{out[-1] if out else ''}`{part}`"]
            continue
        words = part.split(" ")
        if out and i:
            out[-1] += words[0]
            words = words[1:]
        out += words
    return out


def command_lines(cmd: str, indent: str, width: int) -> list[str]:
    """`cmd` as lines of at most `width` columns where it can be cut (outside quotes, `$( )`
    and `{ }`): at top-level ` && `, then between arguments; each cut ends in ` \\`, so the lines
    paste into a shell as the one command. A single word wider than the line stays whole."""
    if len(indent) + len(cmd) <= width:
        return [indent + cmd]
    deeper = indent + CONTINUE
    out: list[str] = []
    for i, seg in enumerate(split_top(cmd, "&&")):
        first = indent if i == 0 else deeper
        text = seg if i == 0 else f"&& {seg}"
        out += _args_lines(text, first, deeper, width)
    return [ln + " \\" for ln in out[:-1]] + out[-1:]


def _args_lines(seg: str, first: str, deeper: str, width: int) -> list[str]:
    lines, cur = [], first
    for w in split_top(seg, " "):
        if cur.strip() and len(cur) + 1 + len(w) + 2 > width:
            lines.append(cur)
            # a long word sits further left, so that it still fits (indent means nothing
            # to the shell)
            indent = min(len(deeper) + len(CONTINUE), max(width - 2 - len(w), 0))
            cur = " " * indent + w
        else:
            cur = f"{cur} {w}" if cur.strip() else cur + w
    lines.append(cur)
    return lines


def split_top(cmd: str, sep: str) -> list[str]:
    """`cmd` split at `sep` where it stands outside quotes, `$( )`, `( )` and `{ }`."""
    parts, cur, quote, depth, i = [], "", "", 0, 0
    token = sep if sep == " " else f" {sep} "
    while i < len(cmd):
        c = cmd[i]
        if quote:
            if c == "\\" and quote == '"' and i + 1 < len(cmd):
                cur += cmd[i:i + 2]
                i += 2
                continue
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "({":
            depth += 1
        elif c in ")}" and depth:
            depth -= 1
        elif c == "\\" and i + 1 < len(cmd):
            cur += cmd[i:i + 2]
            i += 2
            continue
        elif depth == 0 and cmd.startswith(token, i):
            if cur:
                parts.append(cur)
            cur, i = "", i + len(token)
            continue
        cur += c
        i += 1
    if cur:
        parts.append(cur)
    return parts
