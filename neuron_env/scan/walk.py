"""Which files a scan reads: Python, shell scripts and Dockerfiles under the given paths,
honouring .gitignore, skipping virtual environments and VCS folders, following no symlink out
of the tree and none into a directory. I/O only; classification by name is pure."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from neuron_env.errors import UsageError
from neuron_env.guards.files import read_head
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
    try:  # a FIFO or a device is never opened for reading
        head = read_head(path, 128).split(b"\n", 1)[0] + b"\n"
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    if b"python" in head:
        return "python"
    return "shell" if any(s in head for s in (b"sh\n", b"bash", b"zsh", b"sh ")) else None


def display(path: str, cwd: str) -> str:
    """path as reported: relative to cwd where it is below it (path and cwd absolute)."""
    head = cwd if cwd.endswith(os.sep) else cwd + os.sep
    rel = path[len(head):]
    if path.startswith(head):
        if not rel.startswith("..") and os.path.normpath(path) == path:
            return Path(rel).as_posix()  # relpath's answer, cheaply
    elif path != cwd and os.sep == "/" and path[:1] == cwd[:1] == "/" and \
            "//" not in (path[:2], cwd[:2]) and os.path.normpath(path) == path and \
            os.path.normpath(cwd) == cwd:
        return Path(path).as_posix()  # outside cwd: relpath's answer would climb ('..')
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

    def add(self, path: str, kind: str | None, explicit: bool = False,
            real: str | None = None) -> None:
        """real: the path's real path where the caller knows it (a plain entry of a walked
        tree: no component of it is a link)."""
        real = real or os.path.realpath(path)
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
        path = os.path.abspath(path)
        pkg = self.package(os.path.dirname(path)) if kind == "python" else ""
        self.tasks.append(Task(path, display(path, self.cwd), kind, pkg))

    def package(self, d: str) -> str:
        """The dotted package of directory d (iteratively: a 700-level tree of packages)."""
        chain: list[str] = []
        while d not in self._pkg:
            chain.append(d)
            parent = os.path.dirname(d)
            if parent == d or not os.path.isfile(os.path.join(d, "__init__.py")):
                break
            d = parent
        for x in reversed(chain):
            if not os.path.isfile(os.path.join(x, "__init__.py")):
                self._pkg[x] = ""
                continue
            parent = os.path.dirname(x)
            up = self._pkg.get(parent, "") if parent != x else ""
            self._pkg[x] = f"{up}.{os.path.basename(x)}" if up else os.path.basename(x)
        return self._pkg[chain[0]] if chain else self._pkg[d]

    def ignores(self, ign: gitignore.Ignores, d: Path, top: Path,
                path: Path) -> gitignore.Ignores:
        """ign with the patterns of the ignore file `path` (for directory d) added; an
        unreadable file or a bad pattern is a note naming the file (and line)."""
        lines, why = gitignore.read(path)
        if why:
            self.skip(str(path), why)

        def warn(no: int, msg: str) -> None:
            self.skip(f"{display(str(path), self.cwd)}:{no}", msg)
        return ign.extend(_rel(d, top), lines, warn) if lines else ign

    def root(self, given: str) -> None:
        if not os.path.lexists(given):
            raise UsageError(f"{given}: no such file or directory",
                             hint="give files or directories to scan, e.g. neuron-env scan .")
        try:
            is_file, is_dir = os.path.isfile(given), os.path.isdir(given)
        except OSError:  # pragma: no cover - isfile/isdir swallow OSError
            is_file = is_dir = False
        if is_file:
            self.add(given, kind_of(os.path.basename(given)), explicit=True)
            return
        if not is_dir:
            self.skip(given, "not a regular file or directory (or it cannot be stat'ed)")
            return
        root = Path(given).resolve()
        top = repo_top(root) or root
        ign = self.ignores(gitignore.Ignores(), top, top, top / ".git" / "info" / "exclude")
        for d in reversed([p for p in (root.parent, *root.parent.parents)
                           if p == top or top in p.parents]):
            ign = self.ignores(ign, d, top, d / ".gitignore")
        self.tree(root, top, ign, str(root))

    def tree(self, start: Path, top: Path, ign: gitignore.Ignores, inside: str) -> None:
        """Depth first in name order, with an explicit stack (no recursion: any depth)."""
        stack: list[tuple[Iterator[os.DirEntry[str]], gitignore.Ignores]] = []
        pending: list[Path] = [start]
        while pending or stack:
            if pending:
                d = pending.pop()
                here = self.ignores(ign if not stack else stack[-1][1], d, top,
                                    d / ".gitignore")
                try:
                    with os.scandir(d) as it:
                        entries = sorted(it, key=lambda e: e.name)
                except OSError as err:
                    self.skip(str(d), f"unreadable: {err.strerror}")
                    continue
                stack.append((iter(entries), here))
                continue
            it_, here = stack[-1]
            entry = next(it_, None)
            if entry is None:
                stack.pop()
                continue
            sub = self.entry(entry, top, here, inside)
            if sub is not None:
                pending.append(sub)

    def entry(self, e: os.DirEntry[str], top: Path, ign: gitignore.Ignores,
              inside: str) -> Path | None:
        """Handle one directory entry; a directory to descend into is returned."""
        rel = _rel_str(e.path, top)
        try:
            is_link = e.is_symlink()
            is_dir = os.path.isdir(e.path) if is_link else e.is_dir(follow_symlinks=False)
            if is_link:
                os.stat(e.path)  # a dangling link or a loop: say so below
        except OSError as err:
            if ign.ignored(rel, False):
                return None
            if kind_of(e.name) or is_link:
                self.skip(e.path, f"cannot be stat'ed: {err.strerror or err} (skipped)")
            return None
        if ign.ignored(rel, is_dir):
            return None
        if is_dir:
            if is_link:
                self.skip(e.path, "symlink to a directory (not followed)")
            elif e.name in QUIET_DIRS:
                return None
            elif e.name == "site-packages" or os.path.exists(os.path.join(e.path, "pyvenv.cfg")):
                self.skip(e.path, "virtual environment / installed packages")
            else:
                return Path(e.path)
            return None
        if is_link:
            real = os.path.realpath(e.path)
            if not (real == inside or real.startswith(inside + os.sep)):
                if kind_of(e.name):
                    self.skip(e.path, "symlink out of the scanned tree (not followed)")
                return None
        try:
            regular = e.is_file()
        except OSError as err:
            self.skip(e.path, f"cannot be stat'ed: {err.strerror or err} (skipped)")
            return None
        if regular:
            self.add(e.path, kind_of(e.name) or (None if "." in e.name else "sniff"),
                     real=None if is_link else e.path)
        return None


def _rel_str(path: str, top: Path) -> str:
    """_rel(Path(path), top) for a normalised absolute path, without building Paths."""
    t = str(top)
    head = t if t.endswith(os.sep) else t + os.sep
    if path.startswith(head):
        return path[len(head):]
    return _rel(Path(path), top)


def _rel(p: Path, top: Path) -> str:
    try:
        r = p.relative_to(top).as_posix()
    except ValueError:
        return p.as_posix()
    return "" if r == "." else r


def discover(paths: list[str], cwd: str | None = None) -> tuple[list[Task], list[dict[str, str]]]:
    w = Walker(cwd)
    for p in paths:
        w.root(p)
    return w.tasks, w.skipped
