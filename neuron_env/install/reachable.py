"""Which versions of a package the local sources offer without a network: the --find-links
wheelhouses and file:// indexes (PEP 503 layout). Used when resolution fails, so the error
can say what an offline run could install (`--torch 2.13`) instead of only "unreachable"."""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

_HREF = re.compile(r'href="([^"#]+\.whl)', re.I)


def _wheel_version(filename: str, name: str) -> str | None:
    try:
        got, ver, _, _ = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    return str(ver) if got == canonicalize_name(name) else None


def _index_files(url: str, name: str) -> list[str]:
    """Wheel file names a file:// index lists for `name` (its project page or directory)."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme != "file":
        return []
    page = Path(urllib.parse.unquote(parsed.path)) / canonicalize_name(name)
    files: list[str] = []
    if (page / "index.html").is_file():
        text = (page / "index.html").read_text(encoding="utf-8", errors="replace")
        files += [urllib.parse.unquote(h.rsplit("/", 1)[-1]) for h in _HREF.findall(text)]
    elif page.is_dir():
        files += [p.name for p in page.glob("*.whl")]
    return files


def offered(name: str, find_links: tuple[str, ...] | list[str],
            index_urls: tuple[str, ...] | list[str] = ()) -> dict[str, list[str]]:
    """version -> the local sources that offer it (newest first); http(s) indexes are not
    asked (they are what failed)."""
    out: dict[str, list[str]] = {}
    for d in find_links:
        for w in sorted(Path(d).glob("*.whl")):
            v = _wheel_version(w.name, name)
            if v and d not in out.setdefault(v, []):
                out[v].append(d)
    for url in index_urls:
        for f in _index_files(url, name):
            v = _wheel_version(f, name)
            if v and url not in out.setdefault(v, []):
                out[v].append(url)
    from packaging.version import Version

    return dict(sorted(out.items(), key=lambda kv: Version(kv[0]), reverse=True))


def pip_configured(python: str, timeout: float = 30.0) -> tuple[list[str], list[str]]:
    """(find-links directories, file:// index URLs) that pip's own configuration names (its
    config files and PIP_* variables: `pip config list`); ([], []) where pip cannot say."""
    from neuron_env.util import proc

    try:
        res = proc.run([python, "-m", "pip", "config", "list"], timeout=timeout)
    except OSError:
        return [], []
    links: list[str] = []
    urls: list[str] = []
    for line in res.stdout.splitlines() if res.returncode == 0 else []:
        key, _, value = line.partition("=")
        value = value.strip().strip("'\"")
        name = key.rsplit(".", 1)[-1]
        for v in value.split():
            if name == "find-links":
                path = urllib.parse.unquote(urllib.parse.urlparse(v).path) \
                    if v.startswith("file:") else v
                if os.path.isdir(path) and path not in links:
                    links.append(path)
            elif name in ("index-url", "extra-index-url") and v.startswith("file:") \
                    and v not in urls:
                urls.append(v)
    return links, urls


def torch_hint(find_links: tuple[str, ...] | list[str], index_urls: tuple[str, ...] | list[str],
               wanted: str, configured: tuple[list[str], list[str]] = ([], [])) -> str:
    """One sentence for a failed resolution: the torch versions reachable offline.
    `configured`: what pip's configuration names (pip_configured), said as the exact flags."""
    for d in configured[0] if not find_links else []:
        here = offered("torch", [d])
        if here:
            v = next(iter(here))
            minor = ".".join(v.split("+")[0].split(".")[:2])
            return (f"pip's configuration names the wheelhouse {d}, which offers torch "
                    f"{', '.join(here)}; neuron-env installs only from the sources it is "
                    f"given: rerun with --torch {minor} --find-links {d}")
    found = offered("torch", find_links, index_urls)
    if not find_links and not found:
        return (f"nothing offers torch offline here (no --find-links given): pass --find-links "
                f"DIR with torch {wanted} wheels, or a reachable --pytorch-index-url")
    if not found:
        return (f"the local sources ({', '.join([*find_links, *index_urls])}) offer no torch "
                f"wheel: add torch {wanted} wheels to the wheelhouse")
    say = "; ".join(f"{v} ({', '.join(where)})" for v, where in found.items())
    minors = sorted({".".join(v.split("+")[0].split(".")[:2]) for v in found}, reverse=True)
    return (f"torch reachable offline: {say}; choose one with --torch "
            f"{' or --torch '.join(minors)}")
