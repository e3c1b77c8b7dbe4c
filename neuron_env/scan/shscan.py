"""Shell scripts and Dockerfiles: environment variables set or read (`export X=`, `X=1 cmd`,
`$X`, `${X}`, Dockerfile `ENV`/`ARG`) and commands (`neuron_parallel_compile`). Line based;
comments are skipped. Pure: text in, (rule, line, column, end column) out."""

from __future__ import annotations

import re
from typing import Any

from neuron_env.scan.ruleset import Ruleset

ASSIGN = re.compile(r"(?:^|[\s;&|(`])(?:export\s+|declare\s+-x\s+|local\s+|readonly\s+)?"
                    r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
EXPAND = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
DOCKER_ENV = re.compile(r"^\s*(ENV|ARG)\s+(.*)$", re.IGNORECASE)
DOCKER_NAME = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)(?==|\s|$)")


def strip_comment(line: str) -> str:
    """Drop a trailing `# comment` outside quotes (good enough for scripts)."""
    if "#" not in line:
        return line
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def scan(text: str, rs: Ruleset, enabled: set[str], docker: bool = False
         ) -> list[tuple[Any, ...]]:
    hits: list[tuple[Any, ...]] = []
    cmd_rx = re.compile(r"\b(" + "|".join(map(re.escape, rs.commands)) + r")\b") \
        if rs.commands else None
    for n, raw in enumerate(text.splitlines(), 1):
        line = strip_comment(raw)
        if not line.strip():
            continue
        found: list[tuple[str, int, int]] = []
        m = DOCKER_ENV.match(line) if docker else None
        if m:
            start = m.start(2)
            found += [(d.group(1), start + d.start(1), start + d.end(1))
                      for d in DOCKER_NAME.finditer(m.group(2))]
        found += [(a.group(1), a.start(1), a.end(1)) for a in ASSIGN.finditer(line)]
        found += [(x.group(1), x.start(1), x.end(1)) for x in EXPAND.finditer(line)]
        seen = set()
        for name, a, b in found:
            rid = rs.match_env(name)
            if rid in enabled and a not in seen:
                seen.add(a)
                hits.append((rid, n, a, b))
        if cmd_rx:
            for c in cmd_rx.finditer(line):
                rid = rs.commands[c.group(1)]
                if rid in enabled:
                    hits.append((rid, n, c.start(), c.end()))
    return sorted(hits, key=lambda h: (h[1], h[2]))
