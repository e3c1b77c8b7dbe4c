"""THE JSON serialiser of every document neuron-env writes (reports, envelopes, baselines):
RFC 8259 only. `json.dumps` writes a non-finite float as the bare word `NaN`/`Infinity`, which
no strict parser (jq, Go, Rust, JSON Schema validators) accepts; here such a number becomes
`null` and a note on stderr names where it was (docs/security.md, "Numbers are finite")."""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def finite(value: Any, where: str = "$", found: list[str] | None = None) -> Any:
    """`value` with every non-finite float replaced by None (their paths appended to `found`)."""
    if isinstance(value, float) and not math.isfinite(value):
        if found is not None:
            found.append(where)
        return None
    if isinstance(value, dict):
        return {k: finite(v, f"{where}.{k}", found) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v, f"{where}[{i}]", found) for i, v in enumerate(value)]
    return value


def dumps(doc: Any, **kw: Any) -> str:
    """json.dumps(doc, allow_nan=False, default=str): a NaN or an infinity anywhere is written
    as null, with a note on stderr (never a bare NaN/Infinity)."""
    kw.setdefault("default", str)
    try:
        return json.dumps(doc, allow_nan=False, **kw)
    except ValueError:
        pass
    found: list[str] = []
    text = json.dumps(finite(doc, "$", found), allow_nan=False, **kw)
    sys.stderr.write("neuron-env: note: not a finite number, written as null: "
                     + ", ".join(found[:10]) + (" ..." if len(found) > 10 else "") + "\n")
    return text
