"""PEP 503 name normalisation. packaging.utils would do, but importing it pulls packaging.tags
(about 25 ms), and doctor's start-up is part of the product."""

from __future__ import annotations

import re

_SEP = re.compile(r"[-_.]+")


def canonicalize_name(name: str) -> str:
    return _SEP.sub("-", name).lower()
