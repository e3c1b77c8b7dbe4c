"""The one atomic writer: reports, matrices, install manifests are written next to their
target and renamed into place, so a reader never sees half a file."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path | str, content: str) -> None:
    import tempfile  # here: the renderer imports this module on every run, most never write

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
