"""PEP 440 versions and specifier sets on doctor's path, without importing packaging.

Importing `packaging.version` and `packaging.specifiers` costs ~13 ms of CPU (they compile two
large regular expressions), a tenth of doctor's start-up. `Ver` and `Spec` stand in for
packaging's `Version` and `SpecifierSet` wherever neuron-env holds matrix pins and installed
versions. They answer themselves only for the forms the matrices, pip metadata and uname give:

- release-only versions (`2.14.3.0.1234`), optionally `.postN` (the matrices' placeholder
  `1.0.post1`) and a `+local` label (`2.13.0+cpu`), which `public`, `release`, `post` and
  `local` read without packaging; two of them compare here when neither has a local label;
- specifiers `>=`, `<=`, `>`, `<`, `==`, `!=` on release-only versions, and `==`/`!=` prefix
  wildcards (`==2.14.3.0.*`), tested against a release-only version.

For these PEP 440 fixes the answer (trailing zeros do not count; a post-release sorts after
its release and before the next; a prefix is matched on the zero-padded release) and packaging
computes exactly that: tests/unit/test_versions.py checks both agree on many cases. Anything
else (pre and dev releases, epochs, `~=`, `===`, a local label in a comparison, a post-release
tested against a specifier, unparsable text) is handed to packaging, imported then, so its
answer and its errors (InvalidVersion, InvalidSpecifier: both ValueError) are packaging's.

One difference: `Ver` and `Spec` hash consistently with `==` among themselves, not with
packaging's own objects; keep one kind in a set or as dict keys (neuron-env uses these).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
        "==": operator.eq, "!=": operator.ne}


def _packaging_version(text: str):
    from packaging.version import Version

    return Version(text)


def _trim(release: tuple[int, ...]) -> tuple[int, ...]:
    i = len(release)
    while i and release[i - 1] == 0:
        i -= 1
    return release[:i]


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # not "²" or "٣", which isdigit() also takes


def _release(text: str) -> bool:
    """`N(.N)*`: digits, one dot between each."""
    return all(_digits(p) for p in text.split("."))


def _parse(text: str) -> tuple[str, str | None, str | None] | None:
    """(release, post digits, local label) of `N(.N)*[.postN][+local]`, else None (by hand: a
    regular expression for it costs ~1 ms to compile at start-up)."""
    public, plus, local = text.partition("+")
    if plus and not all(p.isascii() and p.isalnum() for p in
                        local.replace("-", ".").replace("_", ".").split(".")):
        return None
    release, dot_post, post = public.partition(".post")
    if not _release(release) or (dot_post and not _digits(post)):
        return None
    return release, post or None, local or None


def _item(text: str) -> tuple[str, str, bool] | None:
    """(operator, release, wildcard) of a specifier `OP N(.N)*[.*]`, else None."""
    op = text[:2] if text[:2] in (">=", "<=", "==", "!=") else text[:1]
    if op not in (">=", "<=", "==", "!=", "<", ">"):
        return None
    version = text[len(op):].strip()
    wild = version.endswith(".*")
    version = version[:-2] if wild else version
    if not _release(version) or (wild and op not in ("==", "!=")):
        return None
    return op, version, wild


def _local(label: str) -> str:
    parts = label.replace("-", ".").replace("_", ".").split(".")
    return ".".join(str(int(p)) if p.isdigit() else p.lower() for p in parts)


class Ver:
    """packaging.version.Version for neuron-env's purposes (see the module's docstring)."""

    __slots__ = ("_k", "_own", "_pk", "local", "post", "release")

    def __init__(self, text) -> None:
        if isinstance(text, Ver):
            for k in self.__slots__:
                setattr(self, k, getattr(text, k))
            return
        m = _parse(text) if isinstance(text, str) else None
        if m:
            release, post, local = m
            self.release = tuple(map(int, release.split(".")))
            self.post = int(post) if post else None
            self.local = _local(local) if local else None
            self._own, self._pk = True, None
            self._k = self._order()
            return
        real = _packaging_version(text if isinstance(text, str) else str(text))
        self.release, self.post, self.local, self._pk = real.release, real.post, real.local, real
        # `v2.14`, `1.0-1`: release (and post) only after all, so compared (and hashed) here
        self._own = real.epoch == 0 and real.pre is None and real.dev is None
        self._k = self._order()

    def _order(self) -> tuple | None:
        """The sort key of a version with no pre/dev/epoch/local label (else None): trailing
        zeros do not count, a post-release sorts after its release."""
        if not self._own or self.local is not None:
            return None
        return _trim(self.release), -1 if self.post is None else self.post

    def real(self):
        """The packaging Version (imports packaging)."""
        if self._pk is None:
            self._pk = _packaging_version(str(self))
        return self._pk

    @property
    def plain(self) -> bool:
        """Release-only (no post, no local): what a Spec compares here."""
        return self._own and self.local is None and self.post is None

    @property
    def major(self) -> int:
        return self.release[0] if self.release else 0

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) >= 2 else 0

    @property
    def micro(self) -> int:
        return self.release[2] if len(self.release) >= 3 else 0

    @property
    def public(self) -> str:
        return str(self).split("+", 1)[0]

    @property
    def base_version(self) -> str:
        return ".".join(map(str, self.release)) if self._own else self.real().base_version

    @property
    def is_postrelease(self) -> bool:
        return self.post is not None

    def __getattr__(self, name: str):  # is_prerelease, epoch, pre, dev, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real(), name)

    def __str__(self) -> str:
        if not self._own:
            return str(self._pk)
        text = ".".join(map(str, self.release))
        text += f".post{self.post}" if self.post is not None else ""
        return f"{text}+{self.local}" if self.local else text

    def __repr__(self) -> str:
        return f"<Version('{self}')>"

    def __hash__(self) -> int:
        return hash(self.real()) if self._k is None else hash(self._k)

    def _pair(self, other):
        """(mine, theirs) as comparable keys, or None when `other` is no version."""
        if isinstance(other, Ver):
            if self._k is not None and other._k is not None:
                return self._k, other._k
            return self.real(), other.real()
        if type(other).__name__ == "Version" and hasattr(other, "release"):
            return self.real(), other  # packaging's Version
        return None

    def __eq__(self, other) -> bool:
        p = self._pair(other)
        return NotImplemented if p is None else p[0] == p[1]

    def __lt__(self, other) -> bool:
        p = self._pair(other)
        return NotImplemented if p is None else p[0] < p[1]

    def __le__(self, other) -> bool:
        p = self._pair(other)
        return NotImplemented if p is None else p[0] <= p[1]

    def __gt__(self, other) -> bool:
        p = self._pair(other)
        return NotImplemented if p is None else p[0] > p[1]

    def __ge__(self, other) -> bool:
        p = self._pair(other)
        return NotImplemented if p is None else p[0] >= p[1]


class SpecItem:
    """One specifier of a `Spec` (packaging's Specifier: operator, version, str)."""

    __slots__ = ("_release", "_wild", "operator", "version")

    def __init__(self, op: str, version: str, wild: bool) -> None:
        self.operator, self._wild = op, wild
        self.version = version + (".*" if wild else "")
        self._release = tuple(int(x) for x in version.split("."))

    def canonical(self) -> tuple[str, str]:
        """packaging's identity of a specifier: `==1.2.0` is `==1.2`, a wildcard as written."""
        if self._wild:
            return self.operator, self.version
        return self.operator, ".".join(map(str, _trim(self._release) or (0,)))

    def contains(self, release: tuple[int, ...]) -> bool:
        """For a release-only candidate (PEP 440's comparison and prefix matching)."""
        if self._wild:
            n = len(self._release)
            hit = (release + (0,) * n)[:n] == self._release
            return hit if self.operator == "==" else not hit
        return _OPS[self.operator](_trim(release), _trim(self._release))

    def __str__(self) -> str:
        return self.operator + self.version

    def __repr__(self) -> str:
        return f"<Specifier({str(self)!r})>"


class Spec:
    """packaging.specifiers.SpecifierSet for neuron-env's purposes (module docstring)."""

    __slots__ = ("_items", "_real")
    _items: list[SpecItem] | None  # None: packaging's SpecifierSet (_real) answers
    _real: SpecifierSet | None

    def __init__(self, text: str = "") -> None:
        items: list[SpecItem] = []
        seen: set[tuple[str, str]] = set()
        own = True  # False: a specifier (or a repeated one) only packaging answers
        for part in (p.strip() for p in text.split(",")):
            m = _item(part) if part else None
            if part and m is None:
                own = False
                break
            if m:
                item = SpecItem(*m)
                if item.canonical() in seen:  # packaging keeps one of equal specifiers
                    own = False
                    break
                seen.add(item.canonical())
                items.append(item)
        if not own:
            from packaging.specifiers import SpecifierSet

            self._items, self._real = None, SpecifierSet(text)
        else:
            self._items, self._real = sorted(items, key=str), None

    def real(self):
        """The packaging SpecifierSet (imports packaging)."""
        if self._real is None:
            from packaging.specifiers import SpecifierSet

            return SpecifierSet(str(self))
        return self._real

    def contains(self, item, prereleases: bool | None = None, installed: bool | None = None):
        if self._items is not None:
            v = item if isinstance(item, Ver) else _fast(item)
            if v is not None and v.plain:
                return all(s.contains(v.release) for s in self._items)
        if isinstance(item, Ver):
            item = item.real()
        return self.real().contains(item, prereleases=prereleases, installed=installed)

    def __contains__(self, item) -> bool:
        return self.contains(item)

    def __iter__(self):
        return iter(self._items if self._items is not None else self._real)

    def __len__(self) -> int:
        return len(self._items if self._items is not None else self.real())

    def __str__(self) -> str:
        return ",".join(map(str, self._items)) if self._items is not None else str(self._real)

    def __repr__(self) -> str:
        return f"<SpecifierSet({str(self)!r})>"

    def _canon(self) -> frozenset | None:
        """The set's identity when every specifier is one answered here, else None."""
        items = self._items
        if items is None:  # e.g. `==1.2,==1.2.0`: packaging kept one simple specifier
            parts = [Spec(str(s))._items for s in self.real()]
            if any(i is None for i in parts):
                return None
            items = [i[0] for i in parts if i is not None]
        return frozenset(s.canonical() for s in items)

    def __hash__(self) -> int:
        canon = self._canon()
        return hash(self._real) if canon is None else hash(canon)

    def __eq__(self, other) -> bool:
        if isinstance(other, Spec):
            mine, theirs = self._canon(), other._canon()
            if mine is not None and theirs is not None:
                return mine == theirs
            other = other.real()
        elif not isinstance(other, str) and type(other).__name__ != "SpecifierSet":
            return NotImplemented
        return self.real() == other

    def __and__(self, other):
        return self.real() & (other.real() if isinstance(other, Spec) else other)

    def __getattr__(self, name: str):  # filter, prereleases, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real(), name)


def _fast(item) -> Ver | None:
    """A candidate as a Ver when it parses here (a str or packaging Version), else None."""
    text = item if isinstance(item, str) else str(item) if hasattr(item, "release") else None
    if text is None or _parse(text) is None:
        return None
    return Ver(text)
