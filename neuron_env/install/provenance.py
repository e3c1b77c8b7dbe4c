"""Pure: did each backend package come from the index the matrix names for it?

pip with extra indexes takes the highest version across ALL of them, so a public package with a
higher matching version would win (dependency confusion). neuron-env therefore resolves each
governed package from its own index alone, pins it by URL and hash, and checks every URL of the
final resolution against these rules BEFORE anything is installed.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from neuron_env.install.plan import Plan
from neuron_env.install.report_parse import Item
from neuron_env.matrix.model import Matrix


def _root(index_url: str) -> tuple[str, str, str]:
    u = urlsplit(index_url)
    path = unquote(u.path).rstrip("/")
    if path.endswith("/simple"):
        path = path[: -len("/simple")]
    return u.scheme, _host(u), path


def _host(u) -> str:
    """host:port without credentials: pip reports file URLs with the mirror's userinfo
    stripped, so https://user:token@mirror/simple serves https://mirror/files/x.whl."""
    try:
        port = u.port
    except ValueError:
        port = None
    return f"{(u.hostname or '').lower()}:{port or {'http': 80, 'https': 443}.get(u.scheme, '')}"


def served_by(url: str, index_url: str) -> bool:
    """Whether a file URL belongs to an index: under the index root, or (http) on its host.

    Mirrors (Artifactory, CodeArtifact, devpi) serve files from other paths on the same host, so
    for http(s) the host decides; for file:// indexes the directory does."""
    scheme, host, root = _root(index_url)
    u = urlsplit(url)
    if u.scheme != scheme:
        return False
    path = unquote(u.path)
    if scheme == "file":
        return path == root or path.startswith(root.rstrip("/") + "/")
    return _host(u) == host


def from_wheelhouse(url: str, find_links: tuple[str, ...]) -> str | None:
    u = urlsplit(url)
    if u.scheme != "file":
        return None
    path = unquote(u.path)
    for d in find_links:
        d = d.rstrip("/")
        if path.startswith(d + "/"):
            return d
    return None


def with_credentials(url: str, index_urls) -> str:
    """The file URL with the userinfo of the index that served it put back: pip's report drops
    it, and the lock is installed with no index to take it from. (The lock file lives in a
    private temporary directory; nothing that is kept holds the result.)"""
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or "@" in u.netloc:
        return url
    for index_url in index_urls:
        iu = urlsplit(index_url)
        if "@" in iu.netloc and served_by(url, index_url):
            return u._replace(netloc=iu.netloc.rsplit("@", 1)[0] + "@" + u.netloc).geturl()
    return url


def origin_of(item: Item, plan: Plan, m: Matrix) -> tuple[str | None, str | None]:
    """(index name, source URL) that served item: an index, 'wheelhouse', or (None, None)."""
    for idx in plan.indexes:
        if served_by(item.url, idx.url):
            return idx.name, idx.url
    wh = from_wheelhouse(item.url, plan.find_links)
    if wh:
        return "wheelhouse", "file://" + wh
    return None, None


def problems(items: list[Item], plan: Plan, m: Matrix) -> list[str]:
    """Every rule broken by a resolution; empty means it may be installed."""
    out = []
    for it in items:
        if m.placeholder(it.name, it.version):
            out.append(f"{it.name} {it.version} is the public index's PLACEHOLDER "
                       f"('WRONG PACKAGE'), offered by {it.url}")
            continue
        want = m.index_for(it.name)
        if want is None:
            continue
        got, _ = origin_of(it, plan, m)
        if got == want.name or got == "wheelhouse":
            continue
        use = plan.index(want.name)
        out.append(f"{it.name} {it.version} would come from {it.url}, not from the "
                   f"{want.name} index ({use.url if use else want.url})")
    return out


def foreign_governed(items: list[Item], plan: Plan, m: Matrix) -> list[Item]:
    """Governed packages (pulled in as dependencies) that came from somewhere else."""
    out = []
    for it in items:
        want = m.index_for(it.name)
        if want and not it.direct and origin_of(it, plan, m)[0] not in (want.name, "wheelhouse"):
            out.append(it)
    return out
