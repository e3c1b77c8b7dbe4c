"""The part of git's ignore rules a scan needs: .gitignore files (every directory from the
repository top down), .git/info/exclude, negation, directory-only and anchored patterns,
`*`, `?`, `[...]` and `**`. Pure apart from `read()`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Pattern:
    base: str            # the directory of the .gitignore, relative to the repository top
    rx: re.Pattern[str]
    negate: bool
    dir_only: bool


@dataclass
class Ignores:
    patterns: list[Pattern] = field(default_factory=list)

    def extend(self, base: str, lines: list[str]) -> Ignores:
        out = Ignores(list(self.patterns))
        for line in lines:
            p = parse(base, line)
            if p is not None:
                out.patterns.append(p)
        return out

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """rel: posix path relative to the repository top. The last matching pattern wins."""
        verdict = False
        for p in self.patterns:
            if p.dir_only and not is_dir:
                continue
            if p.base:
                if not rel.startswith(p.base + "/"):
                    continue
                sub = rel[len(p.base) + 1:]
            else:
                sub = rel
            if p.rx.match(sub):
                verdict = not p.negate
        return verdict


def parse(base: str, line: str) -> Pattern | None:
    line = line.rstrip("\n").rstrip("\r")
    if not line.strip() or line.startswith("#"):
        return None
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    negate = line.startswith("!")
    if negate or line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = translate(line)
    rx = ("^" if anchored else r"^(?:.*/)?") + body + "$"
    return Pattern(base, re.compile(rx, re.DOTALL), negate, dir_only)


def translate(pat: str) -> str:
    out, i, n = [], 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == n:
            out.append(r"/.*")
            i += 3
        elif pat.startswith("**", i):
            out.append(r".*")
            i += 2
        elif c == "*":
            out.append(r"[^/]*")
            i += 1
        elif c == "?":
            out.append(r"[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2)
            if j == -1:
                out.append(r"\[")
                i += 1
            else:
                cls = pat[i + 1:j].replace("\\", "\\\\")
                out.append("[" + ("^" + cls[1:] if cls[:1] == "!" else cls) + "]")
                i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def read(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
