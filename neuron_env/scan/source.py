"""Bytes to text the way Python reads source (BOM, PEP 263 coding cookie, UTF-8 default), and
back. Never fails: undecodable bytes are replaced and said so."""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass

BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    lossy: bool = False          # bytes were replaced: never write this text back
    note: str | None = None      # why the scan.encoding finding is raised


def decode(data: bytes) -> Decoded:
    for bom, enc in BOMS:
        if data.startswith(bom):
            text, lossy = _decode(data, enc)
            return Decoded(text.lstrip("\ufeff"), enc, lossy,
                           f"{enc.upper()} with a BOM: Python itself only reads UTF-8 or a "
                           "declared 8-bit encoding" + (" (bytes replaced)" if lossy else ""))
    note = None
    if _plain_utf8(data):
        text, lossy = _decode(data, "utf-8")
        return Decoded(text, "utf-8", lossy,
                       "bytes that are not valid utf-8 were replaced (U+FFFD)" if lossy else None)
    try:
        enc = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as e:  # an unknown encoding in the cookie, a BOM that contradicts it
        enc, note = "utf-8", f"{e}; read as UTF-8"
    text, lossy = _decode(data, enc)
    if lossy:
        note = f"bytes that are not valid {enc} were replaced (U+FFFD)"
    return Decoded(text, enc, lossy, note)


def _plain_utf8(data: bytes) -> bool:
    """What tokenize.detect_encoding answers without being asked: "utf-8" for a text with no
    UTF-8 BOM whose first two lines are ASCII without "coding" (it only ever looks at those
    two, and only a cookie, a BOM or a line that is not UTF-8 makes it answer otherwise)."""
    if data.startswith(codecs.BOM_UTF8):
        return False
    i = data.find(b"\n")
    j = data.find(b"\n", i + 1) if i >= 0 else -1
    head = data if j < 0 else data[:j]
    return head.isascii() and b"coding" not in head


def _decode(data: bytes, enc: str) -> tuple[str, bool]:
    try:
        return data.decode(enc), False
    except UnicodeDecodeError:
        return data.decode(enc, "replace"), True


def encode(text: str, encoding: str) -> bytes:
    return text.encode(encoding)
