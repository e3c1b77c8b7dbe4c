"""sha256 without `hashlib` on the paths that run on every doctor: hashlib loads OpenSSL
(2-20 ms cold here); CPython's own sha256 module (`_sha2` on 3.12+, `_sha256` before) costs
~0.2 ms and gives the same digest. hashlib where neither exists (another interpreter)."""

from __future__ import annotations

import importlib


def sha256_hex(data: bytes) -> str:
    for name in ("_sha2", "_sha256", "hashlib"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        return str(mod.sha256(data).hexdigest())
    raise RuntimeError("no sha256 implementation")  # pragma: no cover (hashlib always is)
