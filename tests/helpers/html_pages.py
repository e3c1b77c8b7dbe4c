"""HTML report pages for tests: a Report rebuilt from a command's JSON document (the page is
built from that document alone), and headless Chromium to render a page (tests/integration/
test_html_browser.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_env.report.model import Report, Result

FIELDS = ("id", "category", "status", "summary", "observed", "expected", "fix", "docs",
          "details", "timed_out", "fix_command", "fix_safe", "duration_s", "waiver")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "html"


def report_of(doc: dict[str, Any]) -> Report:
    """The Report a command returned, from its JSON document."""
    known = ("schema", "tool", "matrix", "target", "results", "summary", "exit_code")
    return Report(schema=doc["schema"], tool=doc["tool"], matrix=doc.get("matrix"),
                  target=doc.get("target") or {},
                  results=tuple(Result(**{k: r[k] for k in FIELDS if k in r})
                                for r in doc["results"]),
                  exit_code=doc["exit_code"],
                  extra={k: v for k, v in doc.items() if k not in known})


def trial_doc(name: str = "trial-mismatch.json") -> dict[str, Any]:
    return json.loads((FIXTURE / name).read_text())


# -- headless Chromium ----------------------------------------------------------------------------
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--window-size=1200,900")
SKIP = ("no Chromium here (Debian: apt-get install chromium; .ci/run installs it): the HTML "
        "browser tests skip")


@dataclass(frozen=True)
class Browsed:
    dom: str  # the DOM after load (--dump-dom)
    console: list[str]  # every console message: a script error, a blocked load (CSP), a log
    png: bytes  # the screenshot


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


def browse(binary: str, page: Path, work: Path, timeout: float = 60) -> Browsed:
    """One headless Chromium run on `page`: its DOM, console and a 1200x900 screenshot. A run
    past `timeout` is killed with its whole process group (Chromium's children too)."""
    profile, shot = work / "profile", work / "shot.png"
    profile.mkdir(parents=True)
    cmd = [binary, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", "--dump-dom",
           page.resolve().as_uri()]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    assert p.returncode == 0 and shot.exists(), err[-2000:]
    return Browsed(out, [ln for ln in err.splitlines() if ":CONSOLE" in ln], shot.read_bytes())


def png_colours(data: bytes, limit: int = 64) -> int:
    """How many distinct pixel colours a PNG (8-bit RGB or RGBA, as Chromium writes) holds, up
    to `limit`: zlib and struct, no imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", b""
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, ctype = struct.unpack(">IIBB", head[:10])
    assert depth == 8 and ctype in (2, 6), (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev = zlib.decompress(idat), width * bpp, bytearray(width * bpp)
    seen: set[bytes] = set()
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if y % 4 == 0:  # every 4th row is plenty to tell a page from a blank one
            seen.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 2))
            if len(seen) >= limit:
                return len(seen)
    return len(seen)
