"""The part of git's ignore rules a scan needs: .gitignore files (every directory from the
repository top down), .git/info/exclude, negation, directory-only and anchored patterns,
`*`, `?`, `[...]` and `**`. Pure apart from `read()`.

Patterns come from files someone else wrote, so they are never handed to a backtracking regex
engine: a pattern compiles to a small token list that `Glob.match` runs as an NFA (a set of
positions), linear in the path for a fixed pattern (`**a**a**a**a**a**a**a**a**b` included).
A pattern that cannot be compiled (`[z-a]`) is reported with its file and line and skipped."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from neuron_env.guards.files import FileProblem, read_bounded

MAX_BYTES = 4 * 1024 * 1024  # as sources (walk.MAX_BYTES): an ignore file is text

# token kinds
LIT, ONE, CLS, STAR, DSTAR, DIRS = range(6)  # DIRS: `**/` = "" or anything ending in "/"
_POSIX: dict[str, Callable[[str], bool]] = {
          "alnum": str.isalnum, "alpha": str.isalpha, "digit": str.isdigit,
          "lower": str.islower, "upper": str.isupper, "space": str.isspace,
          "xdigit": lambda c: c in "0123456789abcdefABCDEF",
          "punct": lambda c: c.isascii() and c.isprintable() and not c.isalnum()
          and c != " ", "blank": lambda c: c in " \t",
          "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
          "print": str.isprintable, "graph": lambda c: c.isprintable() and c != " "}


class _BadPattern(ValueError):
    """A pattern that cannot be compiled: str() says why."""


@dataclass(frozen=True)
class Cls:
    """A bracket expression: single characters, ranges and POSIX classes, maybe negated."""

    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    named: tuple[str, ...]
    negate: bool

    def has(self, c: str) -> bool:
        hit = c in self.chars or any(a <= c <= b for a, b in self.ranges) or \
            any(_POSIX[n](c) for n in self.named)
        return hit != self.negate


Token = tuple[int, object]


_STARS = (STAR, DSTAR, DIRS)


@dataclass(frozen=True)
class Glob:
    tokens: tuple[Token, ...]
    basename: bool = False          # an unanchored pattern without "/": the last segment
    rx: re.Pattern[str] | None = None  # at most one star and no class: re is linear on it

    @classmethod
    def of(cls, tokens: list[Token]) -> Glob:
        basename = bool(tokens) and tokens[0][0] == DIRS and not any(
            k in (DIRS, DSTAR) or (k == LIT and a == "/") for k, a in tokens[1:])
        body = tokens[1:] if basename else tokens
        rx = None
        if sum(k in _STARS for k, _ in body) <= 1 and all(k != CLS for k, _ in body):
            rx = re.compile("".join(
                re.escape(str(a)) if k == LIT else "[^/]" if k == ONE else "[^/]*"
                if k == STAR else ".*" if k == DSTAR else "(?:.*/)?" for k, a in body),
                re.DOTALL)
        return cls(tuple(body), basename, rx)

    def match(self, s: str) -> bool:
        if self.basename:
            s = s[s.rfind("/") + 1:]
        if self.rx is not None:
            return self.rx.fullmatch(s) is not None
        return self._nfa(s)

    def _nfa(self, s: str) -> bool:
        """The whole of s matches. States are token positions; a DIRS token has two: `i`
        (may still be skipped) and `-i-1` (inside it: only a "/" ends it)."""
        toks, n = self.tokens, len(self.tokens)
        states = self._closure({0})
        for c in s:
            nxt: set[int] = set()
            for st in states:
                if st < 0:  # inside a `**/`
                    i = -st - 1
                    nxt.add(st)
                    if c == "/":
                        nxt.add(i + 1)
                    continue
                if st >= n:
                    continue
                kind, arg = toks[st]
                if kind == LIT:
                    if c == arg:
                        nxt.add(st + 1)
                elif kind == ONE:
                    if c != "/":
                        nxt.add(st + 1)
                elif kind == CLS:
                    if c != "/" and arg.has(c):  # type: ignore[attr-defined]
                        nxt.add(st + 1)
                elif kind == STAR:
                    if c != "/":
                        nxt.add(st)
                elif kind == DSTAR:
                    nxt.add(st)
                else:  # DIRS
                    nxt.add(-st - 1)
                    if c == "/":
                        nxt.add(st + 1)
            if not nxt:
                return False
            states = self._closure(nxt)
        return n in states

    def _closure(self, states: set[int]) -> set[int]:
        """Every position reachable without a character: a star of any kind matches ""."""
        out, todo = set(states), list(states)
        while todo:
            st = todo.pop()
            if 0 <= st < len(self.tokens) and self.tokens[st][0] in (STAR, DSTAR, DIRS) \
                    and st + 1 not in out:
                out.add(st + 1)
                todo.append(st + 1)
        return out


@dataclass(frozen=True)
class Pattern:
    base: str            # the directory of the .gitignore, relative to the repository top
    glob: Glob
    negate: bool
    dir_only: bool


Warn = Callable[[int, str], None]


@dataclass
class Ignores:
    patterns: list[Pattern] = field(default_factory=list)

    def extend(self, base: str, lines: list[str], warn: Warn | None = None) -> Ignores:
        """These patterns added; a bad one is skipped and told to `warn(line number, why)`."""
        new: list[Pattern] = []
        for no, line in enumerate(lines, 1):
            try:
                p = parse(base, line)
            except _BadPattern as e:
                if warn is not None:
                    warn(no, f"pattern {line.strip()!r} ignored: {e}")
                continue
            if p is not None:
                new.append(p)
        return Ignores([*self.patterns, *_batched(new)])

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """rel: posix path relative to the repository top. The last matching pattern wins."""
        verdict = False
        for p in self.patterns:
            if p.dir_only and not is_dir:
                continue
            if (not p.negate) == verdict:  # cannot change the verdict: no need to match
                continue
            if p.base:
                if not rel.startswith(p.base + "/"):
                    continue
                sub = rel[len(p.base) + 1:]
            else:
                sub = rel
            if p.glob.match(sub):
                verdict = not p.negate
        return verdict


def _batched(patterns: list[Pattern]) -> list[Pattern]:
    """Runs of consecutive patterns that `re` matches (and that agree on base, negation,
    directory-only and basename matching) merged into one alternation: the verdict is the
    same whichever of them matches, and a 50,000-line ignore file costs one C-level match
    per path instead of 50,000 Python calls."""
    out: list[Pattern] = []
    run: list[Pattern] = []

    def flush() -> None:
        if len(run) > 1:
            g = run[0].glob
            rx = re.compile("|".join(f"(?:{p.glob.rx.pattern})" for p in run  # type: ignore
                                     ), re.DOTALL)
            out.append(Pattern(run[0].base, Glob((), g.basename, rx), run[0].negate,
                               run[0].dir_only))
        else:
            out.extend(run)
        run.clear()

    for p in patterns:
        key = (p.base, p.negate, p.dir_only, p.glob.basename)
        if p.glob.rx is None or (run and key != (run[0].base, run[0].negate, run[0].dir_only,
                                                 run[0].glob.basename)):
            flush()
        if p.glob.rx is None:
            out.append(p)
        else:
            run.append(p)
    flush()
    return out


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
    toks = compile_glob(line)
    if not anchored:
        toks = [(DIRS, None), *toks]
    return Pattern(base, Glob.of(toks), negate, dir_only)


def compile_glob(pat: str) -> list[Token]:
    """A gitignore glob as tokens (_BadPattern for one that cannot mean anything)."""
    out: list[Token] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i) and (i == 0 or pat[i - 1] == "/"):
            if not out or out[-1][0] != DIRS:  # `**/**/` is one
                out.append((DIRS, None))
            i += 3
        elif pat.startswith("**", i):
            j = i
            while j < n and pat[j] == "*":
                j += 1
            # `**` is "anything" only as a whole segment; elsewhere it is a plain `*` (git)
            whole = (i == 0 or pat[i - 1] == "/") and (j == n or pat[j] == "/")
            kind = DSTAR if whole else STAR
            if not out or out[-1][0] not in (kind, DSTAR):
                out.append((kind, None))
            i = j
        elif c == "*":
            if out and out[-1][0] in (STAR, DSTAR):
                i += 1
                continue
            out.append((STAR, None))
            i += 1
        elif c == "?":
            out.append((ONE, None))
            i += 1
        elif c == "[":
            got = _bracket(pat, i)
            if got is None:  # no closing bracket: a literal "["
                out.append((LIT, "["))
                i += 1
            else:
                cls, i = got
                out.append((CLS, cls))
        elif c == "\\" and i + 1 < n:
            out.append((LIT, pat[i + 1]))
            i += 2
        else:
            out.append((LIT, c))
            i += 1
    return out


def _bracket(pat: str, i: int) -> tuple[Cls, int] | None:
    """The bracket expression starting at pat[i] == "[" and the index after it."""
    j, n = i + 1, len(pat)
    negate = j < n and pat[j] in "!^"
    if negate:
        j += 1
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    named: list[str] = []
    first = True
    while j < n:
        c = pat[j]
        if c == "]" and not first:
            return Cls(frozenset(chars), tuple(ranges), tuple(named), negate), j + 1
        first = False
        if pat.startswith("[:", j):
            end = pat.find(":]", j + 2)
            if end != -1:
                name = pat[j + 2:end]
                if name not in _POSIX:
                    raise _BadPattern(f"unknown character class [:{name}:]")
                named.append(name)
                j = end + 2
                continue
        if c == "\\" and j + 1 < n:
            j += 1
            c = pat[j]
        if j + 2 < n and pat[j + 1] == "-" and pat[j + 2] != "]":
            hi_at = j + 2
            if pat[hi_at] == "\\" and hi_at + 1 < n:
                hi_at += 1
            hi = pat[hi_at]
            if hi < c:
                raise _BadPattern(f"range {c}-{hi} is reversed")
            ranges.append((c, hi))
            j = hi_at + 1
            continue
        chars.add(c)
        j += 1
    return None


def read(path: Path) -> tuple[list[str], str | None]:
    """The lines of an ignore file and, when it is there but was not read, why (a FIFO, a
    device, a symlink to /dev/zero, a file over the sources' size cap are never read)."""
    try:
        data = read_bounded(path, MAX_BYTES)
    except FileNotFoundError:
        return [], None
    except FileProblem as e:
        return [], f"not read: {e.why}"
    except OSError as e:
        if e.errno in (2, 20):  # ENOENT, ENOTDIR
            return [], None
        return [], f"not read: {e.strerror or e}"
    return data.decode("utf-8", errors="replace").splitlines(), None
