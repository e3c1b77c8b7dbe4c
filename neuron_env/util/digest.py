"""sha256 without `hashlib` on the paths that run on every doctor: hashlib loads OpenSSL
(2-20 ms cold here); CPython's own sha256 module (`_sha2` on 3.12+, `_sha256` before) costs
~0.2 ms and gives the same digest. hashlib where neither exists (another interpreter)."""

from __future__ import annotations


def sha256_hex(data: bytes) -> str:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef]  # <= 3.11
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment]
    return str(sha256(data).hexdigest())
