"""Which files a scan reads: Python, shell scripts and Dockerfiles under the given paths,
honouring .gitignore, skipping virtual environments and VCS folders, following no symlink out
of the tree and none into a directory. I/O only; classification by name is pure."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from neuron_env.errors import UsageError
from neuron_env.scan import gitignore

MAX_BYTES = 4 * 1024 * 1024
QUIET_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".ruff_cache",
              ".pytest_cache", "node_modules"}
PY_EXT = (".py", ".pyw")
SH_EXT = (".sh", ".bash", ".zsh", ".ksh")


@dataclass(frozen=True)
class Task:
    path: str      # absolute, for reading
    rel: str       # as reported (relative to the working directory where possible)
    kind: str      # python | shell | docker
    package: str   # dotted package of a Python file (for relative imports), else ""


def kind_of(name: str) -> str | None:
    low = name.lower()
    if low.endswith(PY_EXT):
        return "python"
    if low.endswith(SH_EXT):
        return "shell"
    if low in ("dockerfile", "containerfile") or low.startswith("dockerfile.") or \
            low.endswith((".dockerfile", ".containerfile")):
        return "docker"
    return None


def sniff(path: str) -> str | None:
    """An extensionless script: its shebang decides."""
    try:
        with open(path, "rb") as f:
            head = f.readline(128)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    if b"python" in head:
        return "python"
    return "shell" if any(s in head for s in (b"sh\n", b"bash", b"zsh", b"sh ")) else None


def display(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return Path(rel).as_posix() if not rel.startswith("..") else Path(path).as_posix()


def repo_top(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


class Walker:
    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd or os.getcwd()
        self.tasks: list[Task] = []
        self.skipped: list[dict[str, str]] = []
        self._seen: set[str] = set()
        self._pkg: dict[str, str] = {}

    def skip(self, path: str, reason: str) -> None:
        self.skipped.append({"path": display(path, self.cwd), "reason": reason})

    def add(self, path: str, kind: str | None, explicit: bool = False) -> None:
        real = os.path.realpath(path)
        if real in self._seen:
            return
        if kind == "sniff" or (kind is None and explicit):
            kind = sniff(path)
        if kind is None:
            if explicit:
                self.skip(path, "not a Python file, shell script or Dockerfile")
            return
        try:
            size = os.stat(path).st_size
        except OSError as e:
            self.skip(path, f"unreadable: {e.strerror}")
            return
        if size > MAX_BYTES:
            self.skip(path, f"larger than {MAX_BYTES // (1024 * 1024)} MiB ({size} bytes)")
            return
        self._seen.add(real)
        pkg = self.package(os.path.dirname(os.path.abspath(path))) if kind == "python" else ""
        self.tasks.append(Task(os.path.abspath(path), display(os.path.abspath(path), self.cwd),
                               kind, pkg))

    def package(self, d: str) -> str:
        got = self._pkg.get(d)
        if got is None:
            if os.path.isfile(os.path.join(d, "__init__.py")):
                parent = self.package(os.path.dirname(d)) if os.path.dirname(d) != d else ""
                name = os.path.basename(d)
                got = f"{parent}.{name}" if parent else name
            else:
                got = ""
            self._pkg[d] = got
        return got

    def root(self, given: str) -> None:
        if not os.path.lexists(given):
            raise UsageError(f"{given}: no such file or directory",
                             hint="give files or directories to scan, e.g. neuron-env scan .")
        if os.path.isfile(given):
            self.add(given, kind_of(os.path.basename(given)), explicit=True)
            return
        if not os.path.isdir(given):
            self.skip(given, "not a regular file or directory")
            return
        root = Path(given).resolve()
        top = repo_top(root) or root
        ign = gitignore.Ignores().extend("", gitignore.read(top / ".git" / "info" / "exclude"))
        for d in reversed([p for p in (root.parent, *root.parent.parents)
                           if p == top or top in p.parents]):
            ign = ign.extend(_rel(d, top), gitignore.read(d / ".gitignore"))
        self.tree(root, top, ign, str(root))

    def tree(self, d: Path, top: Path, ign: gitignore.Ignores, inside: str) -> None:
        ign = ign.extend(_rel(d, top), gitignore.read(d / ".gitignore"))
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            self.skip(str(d), f"unreadable: {e.strerror}")
            return
        for e in entries:
            self.entry(e, top, ign, inside)

    def entry(self, e: os.DirEntry, top: Path, ign: gitignore.Ignores, inside: str) -> None:
        rel = _rel(Path(e.path), top)
        is_link = e.is_symlink()
        is_dir = os.path.isdir(e.path) if is_link else e.is_dir(follow_symlinks=False)
        if ign.ignored(rel, is_dir):
            return
        if is_dir:
            if is_link:
                self.skip(e.path, "symlink to a directory (not followed)")
            elif e.name in QUIET_DIRS:
                return
            elif e.name == "site-packages" or os.path.exists(os.path.join(e.path, "pyvenv.cfg")):
                self.skip(e.path, "virtual environment / installed packages")
            else:
                self.tree(Path(e.path), top, ign, inside)
            return
        if is_link:
            real = os.path.realpath(e.path)
            if not (real == inside or real.startswith(inside + os.sep)):
                if kind_of(e.name):
                    self.skip(e.path, "symlink out of the scanned tree (not followed)")
                return
        if e.is_file() or is_link:
            self.add(e.path, kind_of(e.name) or (None if "." in e.name else "sniff"))


def _rel(p: Path, top: Path) -> str:
    try:
        r = p.relative_to(top).as_posix()
    except ValueError:
        return p.as_posix()
    return "" if r == "." else r


def discover(paths: list[str], cwd: str | None = None) -> tuple[list[Task], list[dict]]:
    w = Walker(cwd)
    for p in paths:
        w.root(p)
    return w.tasks, w.skipped
