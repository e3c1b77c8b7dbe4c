"""Outside values in the trial's Markdown views (pure): a model name, a summary, a rank's host
or a baseline's label is literal text in a pull request or an issue, never markup."""

from __future__ import annotations

import re

from neuron_env.guards.text import field

ICONS = {"pass": "✅", "warn": "⚠️", "fail": "❌", "skip": "➖", "error": "💥"}
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>!|~])")  # what makes a link, image, tag, span


def md(value: object) -> str:
    """An outside value (a model name, a summary, a host, a label) as literal Markdown text:
    one line (guards.text.field), every character Markdown or HTML would act on backslash-escaped,
    so `![](https://...)` stays text, never a live image or link in an issue."""
    return _MD_SPECIAL.sub(r"\\\1", field(value))
