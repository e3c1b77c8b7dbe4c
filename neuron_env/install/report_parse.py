"""Pure: pip's `install --dry-run --report` JSON -> the items it would install."""

from __future__ import annotations

import json
from dataclasses import dataclass

from neuron_env.errors import InstallError
from neuron_env.util.names import canonicalize_name


@dataclass(frozen=True)
class Item:
    name: str
    version: str
    url: str
    sha256: str | None
    requires: tuple[str, ...]
    direct: bool  # requested as `name @ url`

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)

    def lock_line(self, url: str | None = None) -> str:
        line = f"{self.name} @ {url or self.url}"
        return line + (f" --hash=sha256:{self.sha256}" if self.sha256 else "")


def parse(text: str) -> list[Item]:
    try:
        doc = json.loads(text)
        rows = doc["install"]
        items = []
        for r in rows:
            meta, info = r["metadata"], r["download_info"]
            hashes = (info.get("archive_info") or {}).get("hashes") or {}
            h = hashes.get("sha256")
            if not h and (info.get("archive_info") or {}).get("hash", "").startswith("sha256="):
                h = info["archive_info"]["hash"].split("=", 1)[1]
            items.append(Item(str(meta["name"]), str(meta["version"]), str(info["url"]), h,
                              tuple(meta.get("requires_dist") or ()), bool(r.get("is_direct"))))
        return items
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InstallError(f"pip's --report could not be read ({type(e).__name__}: {e})",
                           hint="pip 22.2 or newer is needed for `install --report`") from None
