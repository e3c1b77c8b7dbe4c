"""Pure: did each backend package come from the index the matrix names for it?

pip with extra indexes takes the highest version across ALL of them, so a public package with a
higher matching version would win (dependency confusion). neuron-env therefore resolves each
governed package from its own index alone, pins it by URL and hash, and checks every URL of the
final resolution against these rules BEFORE anything is installed.

Attribution (`attribute`): a file belongs to the source whose root (the index URL without its
`/simple`) or explicit files prefix is the LONGEST prefix of the file's URL. Enterprise mirrors
(Artifactory, Nexus, devpi, CodeArtifact) serve many repositories, the public one included, from
one host: the host alone proves nothing there. Only when exactly one known source lives on a host
may a file from elsewhere on that host be credited to it (a mirror serving its files from
another path); on a shared host such a file is refused as ambiguous, with the way out: the
`NEURON_ENV_<INDEX>_FILES_URL` prefix that says where that index's files live.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from neuron_env.install.plan import Plan
from neuron_env.install.report_parse import Item
from neuron_env.matrix.model import Matrix

PUBLIC = "public"


@dataclass(frozen=True)
class Source:
    name: str  # a matrix index name, or "public" (pip's own configured index)
    url: str
    files: str | None = None  # where a mirror serves this index's files, when not under url


def _host(u) -> str:
    """host:port without credentials: pip reports file URLs with the mirror's userinfo
    stripped, so https://user:token@mirror/simple serves https://mirror/files/x.whl."""
    try:
        port = u.port
    except ValueError:
        port = None
    return f"{(u.hostname or '').lower()}:{port or {'http': 80, 'https': 443}.get(u.scheme, '')}"


def _root(index_url: str) -> tuple[str, str, str]:
    """(scheme, host:port, path) of an index's root: its URL less `/simple` (or devpi's
    `/+simple`), no trailing slash."""
    u = urlsplit(index_url)
    path = unquote(u.path).rstrip("/")
    for tail in ("/simple", "/+simple"):
        if path.endswith(tail):
            path = path[: -len(tail)]
            break
    return u.scheme, ("" if u.scheme == "file" else _host(u)), path


def _under(path: str, root: str) -> bool:
    return root == "" or path == root or path.startswith(root + "/")


def _prefix_len(url: str, s: Source) -> int | None:
    """Length of the longest root (or files prefix) of s that holds url, or None."""
    u = urlsplit(url)
    path = unquote(u.path)
    best = None
    for base in (s.url, s.files):
        if not base:
            continue
        scheme, host, root = _root(base) if base is s.url else _files_root(base)
        here = "" if u.scheme == "file" else _host(u)
        if u.scheme == scheme and here == host and _under(path, root):
            best = max(best or 0, len(root))
    return best


def _files_root(prefix: str) -> tuple[str, str, str]:
    u = urlsplit(prefix)
    return u.scheme, ("" if u.scheme == "file" else _host(u)), unquote(u.path).rstrip("/")


def attribute(url: str, sources: list[Source]) -> tuple[Source | None, str | None]:
    """(the source that served url, None) or (None, why it cannot be told)."""
    scored = [(n, i, s) for i, s in enumerate(sources) if (n := _prefix_len(url, s)) is not None]
    if scored:  # longest prefix wins; on a tie the earlier source (matrix indexes come first)
        return max(scored, key=lambda x: (x[0], -x[1]))[2], None
    u = urlsplit(url)
    if u.scheme not in ("http", "https"):
        return None, None
    same = [s for s in sources if _root(s.url)[:2] == (u.scheme, _host(u))]
    if len(same) == 1:  # a mirror that serves its files from another path of its own host
        return same[0], None
    if not same:
        return None, None
    names = ", ".join(f"{s.name} ({s.url})" for s in same)
    return None, (f"{url} is on a host that serves several indexes ({names}) but lies under "
                  "none of their paths, so which one served it cannot be told")


AMBIGUITY_FIX = ("say where that index's files live: NEURON_ENV_NEURON_FILES_URL (or "
                 "NEURON_ENV_PYTORCH_FILES_URL) = the URL prefix of its files on the mirror, "
                 "or give each index its own host")


def sources(plan: Plan) -> list[Source]:
    """The matrix's indexes (as overridden), then pip's own configured (public) indexes."""
    out = [Source(i.name, i.url, getattr(i, "files", None)) for i in plan.indexes]
    roots = {_root(s.url) for s in out}
    for u in getattr(plan, "public", ()) or ():
        if _root(u) not in roots:
            out.append(Source(PUBLIC, u))
    return out


def served_by(url: str, index_url: str) -> bool:
    """Whether a file URL belongs to an index known alone (under its root, or on its host)."""
    return attribute(url, [Source("x", index_url)])[0] is not None


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
    """The file URL with the userinfo of the index that served it put back (kept for callers
    that must hand a URL to a tool; installs take credentials from the environment instead)."""
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or "@" in u.netloc:
        return url
    src, _ = attribute(url, [Source(str(n), i) for n, i in enumerate(index_urls)])
    if src is not None and "@" in urlsplit(src.url).netloc:
        return u._replace(netloc=urlsplit(src.url).netloc.rsplit("@", 1)[0] + "@"
                          + u.netloc).geturl()
    return url


def origin_of(item: Item, plan: Plan, m: Matrix) -> tuple[str | None, str | None]:
    """(index name, source URL) that served item: a matrix index, 'wheelhouse', or (None,
    None): pip's public index, or no known source (or more than one) could have."""
    src, _ = attribute(item.url, sources(plan))
    if src is not None and src.name != PUBLIC:  # the public index is nobody's "index" of record
        return src.name, src.url
    wh = from_wheelhouse(item.url, plan.find_links)
    return ("wheelhouse", "file://" + wh) if wh else (None, None)


def ambiguity(item: Item, plan: Plan) -> str | None:
    """Why item's source cannot be told (a shared mirror host), or None."""
    if from_wheelhouse(item.url, plan.find_links):
        return None
    return attribute(item.url, sources(plan))[1]


def outside(item: Item, index: str, plan: Plan) -> str:
    """The refusal for a governed package that did not come from its own index."""
    use = plan.index(index)
    why = ambiguity(item, plan)
    if why:
        return f"{item.name} {item.version}: {why}; to resolve it, {AMBIGUITY_FIX}"
    return (f"{item.name} {item.version} would come from {item.url}, not from the "
            f"{index} index ({use.url if use else '?'})")


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
        out.append(outside(it, want.name, plan))
    return out


def foreign_governed(items: list[Item], plan: Plan, m: Matrix) -> list[Item]:
    """Governed packages (pulled in as dependencies) that came from somewhere else."""
    out = []
    for it in items:
        want = m.index_for(it.name)
        if want and not it.direct and origin_of(it, plan, m)[0] not in (want.name, "wheelhouse"):
            out.append(it)
    return out
