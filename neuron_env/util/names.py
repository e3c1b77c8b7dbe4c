"""PEP 503 name normalisation. packaging.utils would do, but importing it pulls packaging.tags
(about 25 ms), and doctor's start-up is part of the product."""

from __future__ import annotations

import re

_SEP = re.compile(r"[-_.]+")
# an EC2 instance type as IMDS and users write it: trn2.48xlarge, trn2u.48xlarge
INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")


def canonicalize_name(name: str) -> str:
    return _SEP.sub("-", name).lower()
