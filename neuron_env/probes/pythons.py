"""The Python interpreters this host has (PATH, pyenv, uv-managed, /usr/bin): what a fix line
may name. Names only (`python3.12`), no subprocess: a listdir per place, so doctor stays fast."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

NAME = re.compile(r"^python(3\.\d+)$")


def _places(env: dict[str, str], home: Path) -> list[Path]:
    dirs = [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    for base in (Path(env.get("PYENV_ROOT") or home / ".pyenv") / "versions",
                 Path(env.get("UV_PYTHON_INSTALL_DIR") or home / ".local/share/uv/python")):
        with contextlib.suppress(OSError):
            dirs += sorted(d / "bin" for d in base.iterdir() if d.is_dir())
    return [*dirs, Path("/usr/bin"), Path("/usr/local/bin")]


def find_pythons(env: dict[str, str] | None = None,
                 home: Path | None = None) -> tuple[tuple[str, str], ...]:
    """((path, "3.12"), ...): the first of each version found, outside virtual environments
    (a venv's python is no base for a new venv)."""
    env = dict(os.environ) if env is None else env
    home = home or Path(env.get("HOME") or Path.home())
    seen: dict[str, str] = {}
    for d in _places(env, home):
        if d.name == "shims" or (d.parent / "pyvenv.cfg").exists():  # pyenv shims: see above
            continue
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in sorted(names):
            m = NAME.match(n)
            if m and m.group(1) not in seen and os.access(d / n, os.X_OK):
                seen[m.group(1)] = str(d / n)
    return tuple((p, v) for v, p in seen.items())


def find_uv(env: dict[str, str] | None = None) -> str | None:
    env = dict(os.environ) if env is None else env
    return shutil.which("uv", path=env.get("PATH"))
