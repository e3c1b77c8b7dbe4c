"""The Python interpreters this host has (PATH, pyenv, uv-managed, /usr/bin): what a fix line
may name. Names only (`python3.12`), no subprocess: a listdir per place, so doctor stays fast."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuron_env.probes.host import Root

NAME = re.compile(r"^python(3\.\d+)$")


def _places(env: dict[str, str], home: str) -> list[str]:
    """Directories to list, as strings (pathlib costs ~0.1 ms a path on doctor's path)."""
    dirs = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    for base in (os.path.join(env.get("PYENV_ROOT") or os.path.join(home, ".pyenv"), "versions"),
                 env.get("UV_PYTHON_INSTALL_DIR") or os.path.join(home, ".local/share/uv/python")):
        with contextlib.suppress(OSError):
            dirs += sorted(os.path.join(e.path, "bin") for e in os.scandir(base) if e.is_dir())
    return [*dirs, "/usr/bin", "/usr/local/bin"]


def find_pythons(env: dict[str, str] | None = None,
                 home: Path | str | None = None) -> tuple[tuple[str, str], ...]:
    """((path, "3.12"), ...): the first of each version found, outside virtual environments
    (a venv's python is no base for a new venv)."""
    env = dict(os.environ) if env is None else env
    home = str(home or env.get("HOME") or Path.home())
    seen: dict[str, str] = {}
    listed: set[tuple[int, int]] = set()  # /bin and /usr/bin are one directory on most hosts
    for d in _places(env, home):
        d = d.rstrip("/") or "/"
        if os.path.basename(d) == "shims" or os.path.exists(
                os.path.join(os.path.dirname(d), "pyvenv.cfg")):  # pyenv shims: see above
            continue
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in listed:
                continue
            listed.add((st.st_dev, st.st_ino))
            names = os.listdir(d)
        except OSError:
            continue
        for n in sorted(n for n in names if n.startswith("python3.")):  # /usr/bin: ~1,000
            m = NAME.match(n)
            path = os.path.join(d, n)
            if m and m.group(1) not in seen and os.access(path, os.X_OK):
                seen[m.group(1)] = path
    return tuple((p, v) for v, p in seen.items())


def find_uv(env: dict[str, str] | None = None) -> str | None:
    env = dict(os.environ) if env is None else env
    return shutil.which("uv", path=env.get("PATH"))


def find_pythons_in(root: Root, path: str) -> tuple[tuple[str, str], ...]:
    """Under --root: the image's interpreters (its PATH, /usr/bin, /usr/local/bin), named as
    the image sees them (`/usr/bin/python3.12`); every symlink resolves inside the root and
    nothing of the real host (its PATH, pyenv, uv) is read."""
    seen: dict[str, str] = {}
    for d in [*(p for p in path.split(":") if p.startswith("/")), "/usr/bin", "/usr/local/bin"]:
        d = d.rstrip("/") or "/"
        try:
            names = os.listdir(root.file(d.lstrip("/")))
        except OSError:
            continue
        for n in sorted(n for n in names if n.startswith("python3.")):
            m = NAME.match(n)
            if not m or m.group(1) in seen:
                continue
            real = root.file(f"{d.lstrip('/')}/{n}")
            with contextlib.suppress(OSError):
                if real.is_file() and os.access(real, os.X_OK):
                    seen[m.group(1)] = f"{d}/{n}"
    return tuple((p, v) for v, p in seen.items())


def find_uv_in(root: Root, path: str) -> str | None:
    for d in (p for p in path.split(":") if p.startswith("/")):
        real = root.file(f"{d.strip('/')}/uv")
        with contextlib.suppress(OSError):
            if real.is_file() and os.access(real, os.X_OK):
                return f"{d.rstrip('/')}/uv"
    return None
