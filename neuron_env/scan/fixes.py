"""The safe mechanical rewrites (a rule's `fix` names one) and how edits are applied to a
text. Pure: AST nodes and text in, (start, end, replacement) character edits out."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from neuron_env.scan.ruleset import Rule

STRING = re.compile(r"""^(?P<p>[rRuU]?)(?P<q>'|")(?P<s>[^'"\\\n]*)(?P=q)$""")
SIMPLE = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
Edit = tuple[int, int, str, bool]  # (start, end, new text, needs `import torch`)


class Lines:
    """Maps AST positions (line, UTF-8 byte column) to offsets in the text."""

    def __init__(self, text: str, fstrings: list[ast.JoinedStr] | None = None) -> None:
        self.text = text
        self._nodes = fstrings or []  # the f-strings that can hold a finding (the Analyzer's)
        self._fstrings: list[tuple[int, int, str]] | None = None
        self.starts = [0]
        for m in re.finditer(r"\r\n|\r|\n", text):
            self.starts.append(m.end())

    def line(self, n: int) -> str:
        a = self.starts[n - 1]
        b = self.starts[n] if n < len(self.starts) else len(self.text)
        return self.text[a:b]

    def column(self, n: int, byte_col: int) -> int:
        """0-based character column of a byte column."""
        s = self.line(n)
        return byte_col if s.isascii() else len(s.encode("utf-8")[:byte_col].decode(
            "utf-8", "replace"))

    def offset(self, n: int, byte_col: int) -> int:
        return self.starts[n - 1] + self.column(n, byte_col)

    @property
    def fstrings(self) -> list[tuple[int, int, str]]:
        """(start, end, its quote) of the f-strings, worked out when a fix first asks."""
        if self._fstrings is None:
            self._fstrings = list(_fstrings(self._nodes, self))
        return self._fstrings

    def span(self, node: ast.AST) -> tuple[int, int]:
        line, col, end_line, end_col = position(node)
        return self.offset(line, col), self.offset(end_line, end_col)


def position(node: ast.AST) -> tuple[int, int, int, int]:
    """(line, byte column, end line, end byte column) of a parsed statement or expression (what
    the Analyzer reports): ast.parse gives them all four."""
    if (not isinstance(node, (ast.expr, ast.stmt)) or node.end_lineno is None
            or node.end_col_offset is None):
        raise TypeError(f"{type(node).__name__} has no source position")
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def edit(rule: Rule, node: ast.AST, lines: Lines) -> Edit | None:
    """(start, end, new text, needs `import torch`) or None when this occurrence is not safe."""
    fixer = FIXERS.get(rule.fix or "")
    return None if fixer is None else fixer(rule, node, lines)


def _string(rule: Rule, node: ast.AST, lines: Lines) -> Edit | None:
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    a, b = lines.span(node)
    m = STRING.match(lines.text[a:b])
    if not m or m.group("s") != node.value or not rule.fix_from:
        return None
    new = re.sub(rule.fix_from, rule.fix_to or "", node.value, count=1)
    return a, b, f"{m.group('p')}{m.group('q')}{new}{m.group('q')}", False


FSTRING = re.compile(r"""^[rRbBuUfF]*('{3}|"{3}|'|")""")


def _fstrings(nodes: list[ast.JoinedStr], lines: Lines) -> Iterator[tuple[int, int, str]]:
    """Where the f-strings are and which quote each uses: before Python 3.12 (PEP 701) an
    expression inside an f-string cannot use its quote, so a fix there picks another. The
    Analyzer collects them on its one walk: a finding's every enclosing f-string is on the way
    to it."""
    for n in nodes:
        if getattr(n, "end_lineno", None):
            a, b = lines.span(n)
            m = FSTRING.match(lines.text[a:b])
            if m:
                yield a, b, m.group(1)[0]


def quote_for(lines: Lines, a: int, b: int) -> str | None:
    """A quote a string literal at [a, b) may use on every supported Python (3.10+): one no
    enclosing f-string uses; None when both are taken."""
    used = {q for x, y, q in lines.fstrings if x < a and b < y}
    return next((q for q in ('"', "'") if q not in used), None)


def _device_index(node: ast.Call) -> int | bool | None:
    """xla_device() -> None; xla_device(1) / xla_device(n=1) -> 1; anything else -> False
    (not rewritten: an index the code computes is the reader's to carry over)."""
    args = [*node.args, *(k.value for k in node.keywords if k.arg in ("n", "index"))]
    if len(args) != len(node.args) + len(node.keywords) or len(args) > 1:
        return False
    if not args:
        return None
    v = args[0]
    if isinstance(v, ast.Constant) and isinstance(v.value, int) and \
            not isinstance(v.value, bool) and v.value >= 0:
        return v.value
    return False


def _device_call(rule: Rule, node: ast.AST, lines: Lines) -> Edit | None:
    if not isinstance(node, ast.Call):
        return None
    index = _device_index(node)
    if index is False:
        return None
    a, b = lines.span(node)
    q = quote_for(lines, a, b)
    name = "neuron" if index is None else f"neuron:{index}"
    return None if q is None else (a, b, f"torch.device({q}{name}{q})", True)


def _optimizer_step(rule: Rule, node: ast.AST, lines: Lines) -> Edit | None:
    if not isinstance(node, ast.Call) or len(node.args) != 1 or node.keywords or \
            isinstance(node.args[0], ast.Starred):
        return None
    a, b = lines.span(node)
    x, y = lines.span(node.args[0])
    arg = lines.text[x:y]
    if not isinstance(node.args[0], SIMPLE):
        arg = f"({arg})"
    return a, b, f"{arg}.step()", False


FIXERS = {"string": _string, "device_call": _device_call, "optimizer_step": _optimizer_step}


def apply(text: str, edits: list[Edit], import_at: int | None,
          has_torch: bool) -> tuple[str, int]:
    """The text with the non-overlapping edits applied (the first of overlapping ones wins;
    a later --fix run takes the rest) and `import torch` added where an edit needs it.
    Returns (new text, number of edits applied)."""
    chosen, end = [], -1
    for e in sorted(edits, key=lambda e: (e[0], -e[1])):
        if e[0] >= end:
            chosen.append(e)
            end = e[1]
    count = len(chosen)
    if any(e[3] for e in chosen) and not has_torch and import_at is not None:
        nl = "\r\n" if "\r\n" in text else "\n"
        chosen.append((import_at, import_at, "import torch" + nl, False))
    out, pos = [], 0
    for a, b, new, _ in sorted(chosen, key=lambda e: (e[0], e[1])):
        out.append(text[pos:a])
        out.append(new)
        pos = b
    out.append(text[pos:])
    return "".join(out), count


def import_point(tree: ast.Module, lines: Lines) -> int:
    """Where `import torch` goes: after the docstring and `from __future__` imports."""
    for st in tree.body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and \
                isinstance(st.value.value, str) and st is tree.body[0]:
            continue
        if isinstance(st, ast.ImportFrom) and st.module == "__future__":
            continue
        return lines.starts[st.lineno - 1]
    return len(lines.text)


def _used_names(tree: ast.AST) -> set[str]:
    """Every name the code refers to (loads, stores, deletes, global/nonlocal declarations)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if type(n) is ast.Name:
            out.add(n.id)
        elif type(n) is ast.Global or type(n) is ast.Nonlocal:
            out.update(n.names)
    return out


def _bound(st: ast.Import | ast.ImportFrom) -> list[str] | None:
    """The names an import binds; None for one never removed (`*`, `from __future__`)."""
    if isinstance(st, ast.ImportFrom) and (st.module == "__future__" or
                                           any(a.name == "*" for a in st.names)):
        return None
    return [a.asname or (a.name.split(".")[0] if isinstance(st, ast.Import) else a.name)
            for a in st.names]


def drop_unused_imports(old: ast.Module, new_text: str) -> str:
    """new_text without the import statements that the rewrite left unused: every name such a
    statement binds was used in the old code and is used nowhere in the new (an import unused
    before stays, as does one that binds another name still used). Only whole statements on
    lines of their own go (`import a; x = 1` stays); a block they would leave empty gets a
    `pass`. A new text that does not parse is returned as it is."""
    try:
        tree = ast.parse(new_text)
    except (SyntaxError, ValueError):
        return new_text
    before, now = _used_names(old), _used_names(tree)
    gone = before - now
    if not gone:
        return new_text
    lines = Lines(new_text)
    cuts: list[tuple[int, int, str]] = []
    for body in _bodies(tree):
        drop = [st for st in body if isinstance(st, (ast.Import, ast.ImportFrom))
                and (names := _bound(st)) and all(n in gone for n in names) and _alone(st, lines)]
        for i, st in enumerate(drop):
            a = lines.starts[st.lineno - 1]
            end = st.end_lineno or st.lineno
            b = lines.starts[end] if end < len(lines.starts) else len(new_text)
            keep = "" if len(drop) < len(body) or body is tree.body or i else \
                lines.line(st.lineno)[:st.col_offset] + "pass" + new_text[a:b][
                    len(new_text[a:b].rstrip("\r\n")):]
            cuts.append((a, b, keep))
    out, pos = [], 0
    for a, b, keep in sorted(cuts):
        out += [new_text[pos:a], keep]
        pos = b
    return "".join(out) + new_text[pos:]


def _bodies(tree: ast.AST) -> list[list[ast.stmt]]:
    return [v for n in ast.walk(tree) for f in ("body", "orelse", "finalbody")
            if isinstance(v := getattr(n, f, None), list) and v and isinstance(v[0], ast.stmt)]


def _alone(st: ast.stmt, lines: Lines) -> bool:
    """The statement has its lines to itself (a comment after it may go with it)."""
    first = lines.line(st.lineno)
    last = lines.line(st.end_lineno or st.lineno)
    rest = last.encode("utf-8")[st.end_col_offset or 0:].decode("utf-8", "replace").strip()
    return not first[:st.col_offset].strip() and (not rest or rest.startswith("#"))
