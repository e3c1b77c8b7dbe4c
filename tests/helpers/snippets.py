"""The copy-paste snippets of docs/*.md, so tests run what users paste: a fenced block right
after an HTML comment `<!-- snippet: NAME -->`."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.cli import REPO

_BLOCK = re.compile(r"<!-- snippet: (?P<name>[\w.-]+) -->\s*\n(?P<fence>```+)[^\n]*\n"
                    r"(?P<body>.*?)\n(?P=fence)\s*$", re.S | re.M)


def snippets(page: str = "integrations.md") -> dict[str, str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for m in _BLOCK.finditer(text):
        assert m.group("name") not in out, f"snippet {m.group('name')} twice in {page}"
        out[m.group("name")] = m.group("body") + "\n"
    return out


def snippet(name: str, page: str = "integrations.md") -> str:
    found = snippets(page)
    assert name in found, f"docs/{page} has no snippet {name!r} (has {sorted(found)})"
    return found[name]


def docs_path(*parts: str) -> Path:
    return REPO.joinpath("docs", *parts)
