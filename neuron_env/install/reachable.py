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


def pip_config_files(env: dict[str, str] | None = None, prefix: str | None = None) -> list[Path]:
    """The files pip reads its configuration from, lowest priority first, as pip orders them:
    global, user (not when PIP_CONFIG_FILE names a file that exists), site, PIP_CONFIG_FILE;
    none at all when PIP_CONFIG_FILE is os.devnull."""
    env = dict(os.environ) if env is None else env
    named = env.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    xdg_dirs = (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    home = env.get("HOME") or os.path.expanduser("~")
    user = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [*(Path(d) / "pip" / "pip.conf" for d in reversed(xdg_dirs)), Path("/etc/pip.conf")]
    if not (named and os.path.exists(named)):
        files += [Path(home) / ".pip" / "pip.conf", Path(user) / "pip" / "pip.conf"]
    files += [Path(prefix) / "pip.conf"] if prefix else []
    return files + ([Path(named)] if named else [])


def pip_configured(env: dict[str, str] | None = None,
                   prefix: str | None = None) -> tuple[list[str], list[str]]:
    """(find-links directories, file:// index URLs) that pip's own configuration gives: for each
    setting the value of the source pip would use (a later file, [install] over [global], then
    PIP_FIND_LINKS / PIP_INDEX_URL / PIP_EXTRA_INDEX_URL), read as pip would, without running it."""
    import configparser

    env = dict(os.environ) if env is None else env
    values: dict[str, list[str]] = {"find-links": [], "index-url": [], "extra-index-url": []}
    for f in pip_config_files(env, prefix):
        cp = configparser.RawConfigParser()
        try:
            cp.read(f, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            for key in values:
                for k in (key, key.replace("-", "_")):
                    if cp.has_option(section, k):
                        values[key] = (cp.get(section, k) or "").split()
    for key in values:
        if ("PIP_" + key.upper().replace("-", "_")) in env:
            values[key] = env["PIP_" + key.upper().replace("-", "_")].split()
    links: list[str] = []
    for v in values["find-links"]:
        path = urllib.parse.unquote(urllib.parse.urlparse(v).path) if v.startswith("file:") \
            else v
        if os.path.isdir(path) and path not in links:
            links.append(path)
    urls = [v for v in dict.fromkeys(values["index-url"] + values["extra-index-url"])
            if v.startswith("file:")]
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
    want_minor = ".".join(wanted.split("+")[0].split(".")[:2])
    if want_minor in minors:  # the wanted torch line is there: never "choose --torch <it>"
        exact = any(v.split("+")[0] == wanted.split("+")[0] for v in found)
        if exact:
            return (f"torch {wanted} is reachable offline ({say}): the resolution failed on "
                    "another requirement (the installer's output names it)")
        return (f"torch reachable offline: {say}; this release pins torch {wanted}: add "
                f"torch {wanted} wheels to the wheelhouse")
    return (f"torch reachable offline: {say}; choose one with --torch "
            f"{' or --torch '.join(minors)}")
