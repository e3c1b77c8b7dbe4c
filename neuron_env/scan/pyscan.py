"""One Python file's analysis: the AST (never importing or running the code), names resolved the
way Python resolves them within the file (imports, aliases, relative imports, locals that shadow
an import), and the rule lookups of a Ruleset. Pure: text in, hits out.

One pass over the tree; function bodies are analysed after their module has been (they run
after it is imported)."""

from __future__ import annotations

import ast
import re
import sys

from neuron_env.scan.ruleset import Ruleset

A, N, C, K, S = ast.Attribute, ast.Name, ast.Call, ast.Constant, ast.Starred
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
if sys.version_info >= (3, 11):
    TRIES = (ast.Try, ast.TryStar)
else:
    TRIES = (ast.Try,)
ENV_CALLS = {"os.getenv", "os.environ.get", "os.environ.setdefault", "os.environ.pop",
             "os.putenv", "os.unsetenv"}
DEVICE_KW = ("device", "map_location")


def needles(rs: Ruleset) -> re.Pattern[str]:
    """The identifiers without which a file cannot match any rule, as one pattern of whole
    ASCII words.

    Every finding of the Analyzer starts from an identifier written in the file: an imported
    module (import rules), the first name of a qualified name (name, prefix and call rules;
    `os` for the environment), a method name, or the `to`/`device=`/`map_location=` that a
    device string is passed through. In ASCII text an identifier is that word between
    non-word characters, so a file where none of these words occurs (in code, comments or
    strings alike) has no finding; a file whose package starts with one (relative imports)
    or that is not ASCII (identifiers are NFKC-normalised) is always analysed."""
    words = {p.split(".")[0] for p in (*rs.names, *rs.prefixes, *rs.calls, *rs.imports)}
    words |= {"os", "to", *DEVICE_KW, *rs.methods}
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b", re.ASCII)


def may_hit(pattern: re.Pattern[str], text: str, package: str = "") -> bool:
    """False only when no rule can match this file (see needles)."""
    return (not text.isascii() or pattern.search(text) is not None
            or (bool(package) and pattern.fullmatch(package.partition(".")[0]) is not None))


class Scope:
    __slots__ = ("is_class", "names", "parent")

    def __init__(self, parent: Scope | None, is_class: bool = False) -> None:
        self.names: dict[str, str | None] = {}  # name -> qualified name, None: a plain local
        self.parent, self.is_class = parent, is_class


class Analyzer:
    def __init__(self, rs: Ruleset, enabled: set[str], text: str, package: str = "") -> None:
        self.rs, self.enabled, self.text, self.package = rs, enabled, text, package
        self.hits: list[tuple[str, ast.AST]] = []
        self.deferred: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, Scope]] = []
        self.roots = rs.roots
        self.module_binds_torch = False
        self.fstrings: list[ast.JoinedStr] = []  # every f-string on the way to a finding

    # -- names -----------------------------------------------------------------------------
    def resolve(self, name: str, scope: Scope) -> tuple[str | None, bool]:
        """(qualified name, bound by an import). (None, False): a local that shadows."""
        s: Scope | None = scope
        first = True
        while s is not None:
            if (first or not s.is_class) and name in s.names:
                q = s.names[name]
                return q, q is not None
            first, s = False, s.parent
        return name, False

    def hit(self, rid: str | None, node: ast.AST) -> None:
        if rid is not None and rid in self.enabled:
            self.hits.append((rid, node))

    def run(self, tree: ast.Module) -> list[tuple[str, ast.AST]]:
        module = Scope(None)
        self.body(tree.body, module)
        self.module_binds_torch = module.names.get("torch") == "torch"
        while self.deferred:
            fn, scope = self.deferred.pop(0)
            self.function(fn, scope)
        return self.hits

    # -- statements (always walked: they bind names) ----------------------------------------
    def body(self, stmts: list[ast.stmt], scope: Scope) -> None:
        for st in stmts:
            self.stmt(st, scope)

    def stmt(self, st: ast.stmt, scope: Scope) -> None:
        t = type(st)
        if t is ast.Expr or t is ast.Return:  # the commonest first (`f(x)`, `return x`)
            value = st.value  # type: ignore[attr-defined]
            if value is not None:
                self.expr(value, scope)
        elif type(st) is ast.Import:
            self.import_(st, scope)
        elif type(st) is ast.ImportFrom:
            self.import_from(st, scope)
        elif isinstance(st, FUNCS):
            self.define(st, scope)
        elif type(st) is ast.ClassDef:
            for x in (*st.decorator_list, *st.bases, *(k.value for k in st.keywords)):
                self.expr(x, scope)
            inner = Scope(scope, is_class=True)
            self.body(st.body, inner)
            scope.names[st.name] = None
        elif type(st) is ast.Assign:
            self.expr(st.value, scope)
            fallback = type(st.value) is K and st.value.value is None
            for tg in st.targets:
                self.bind(tg, scope, keep_imports=fallback)
        elif type(st) is ast.AnnAssign or type(st) is ast.AugAssign:
            if st.value is not None:
                self.expr(st.value, scope)
            self.bind(st.target, scope)
        elif type(st) is ast.For or type(st) is ast.AsyncFor:
            self.expr(st.iter, scope)
            self.bind(st.target, scope)
            self.body(st.body, scope)
            self.body(st.orelse, scope)
        elif type(st) is ast.While or type(st) is ast.If:
            self.expr(st.test, scope)
            self.body(st.body, scope)
            self.body(st.orelse, scope)
        elif type(st) is ast.With or type(st) is ast.AsyncWith:
            for it in st.items:
                self.expr(it.context_expr, scope)
                if it.optional_vars is not None:
                    self.bind(it.optional_vars, scope)
            self.body(st.body, scope)
        elif isinstance(st, TRIES):
            self.body(st.body, scope)
            for h in st.handlers:
                if h.type is not None:
                    self.expr(h.type, scope)
                if h.name:
                    scope.names[h.name] = None
                self.body(h.body, scope)
            self.body(st.orelse, scope)
            self.body(st.finalbody, scope)
        elif type(st) is ast.Match:
            self.expr(st.subject, scope)
            for case in st.cases:
                if case.guard is not None:
                    self.expr(case.guard, scope)
                self.body(case.body, scope)
        else:
            for f in _FIELDS.get(t) or _fields(t):
                self.child(getattr(st, f, None), scope)

    def bind(self, target: ast.AST, scope: Scope, keep_imports: bool = False) -> None:
        if type(target) is N:
            if not (keep_imports and scope.names.get(target.id)):
                scope.names[target.id] = None
        elif type(target) is ast.Tuple or type(target) is ast.List:
            for e in target.elts:
                self.bind(e, scope)
        elif type(target) is S:
            self.bind(target.value, scope)
        else:  # an attribute or a subscript (os.environ["X"] = ...): an expression
            self.expr(target, scope)

    def import_(self, st: ast.Import, scope: Scope) -> None:
        best = None
        for a in st.names:
            best = best or self.rs.match_import(a.name)
            if a.asname:
                scope.names[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                scope.names[top] = top
        self.hit(best, st)

    def import_from(self, st: ast.ImportFrom, scope: Scope) -> None:
        mod = self.absolute(st.module or "", st.level)
        best = None  # a name's module is the longer, more specific match: it wins
        for a in st.names:
            if a.name == "*":
                continue
            q = f"{mod}.{a.name}" if mod else a.name
            best = best or self.rs.match_import(q)
            scope.names[a.asname or a.name] = q
        self.hit(best or self.rs.match_import(mod), st)

    def absolute(self, module: str, level: int) -> str:
        if not level:
            return module
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts):
            return module
        base = parts[:len(parts) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def define(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> None:
        args = fn.args
        for x in (*fn.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d)):
            self.expr(x, scope)
        for dec in fn.decorator_list:  # a bare @torch.compile is a call without arguments
            if type(dec) in (A, N):
                q = self.qualify(dec, scope)
                if q in self.rs.calls:
                    self.conditions(q, [], [], dec, scope)
        scope.names[fn.name] = None
        self.deferred.append((fn, scope))

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, outer: Scope) -> None:
        inner = Scope(outer)
        a = fn.args
        for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
            if p is not None:
                inner.names[p.arg] = None
        self.body(fn.body, inner)

    # -- expressions ------------------------------------------------------------------------
    def child(self, v: object, scope: Scope) -> None:
        if type(v) is list:
            for e in v:
                if isinstance(e, ast.AST) and type(e) is not K:
                    self.expr(e, scope)
        elif isinstance(v, ast.AST) and type(v) is not K:
            self.expr(v, scope)

    def expr(self, node: ast.AST, scope: Scope) -> None:
        t = type(node)
        if t is N:  # ref() of a bare name, inlined: most nodes are names
            s: Scope | None = scope
            first, name = True, node.id  # type: ignore[attr-defined]
            while s is not None:
                if (first or not s.is_class) and name in s.names:
                    q = s.names[name]
                    if q is not None and q.partition(".")[0] in self.roots:
                        self.hit(self.rs.match_name(q), node)
                    return
                first, s = False, s.parent
            if name in self.roots:
                self.hit(self.rs.match_name(name), node)
        elif t is A:
            self.ref(node, scope)
        elif type(node) is C:
            self.call(node, scope)
        elif t is K:
            return
        elif t is ast.BinOp:  # generic visits, spelled out for the commonest kinds
            self.expr(node.left, scope)  # type: ignore[attr-defined]
            self.expr(node.right, scope)  # type: ignore[attr-defined]
        elif t is ast.UnaryOp:
            self.expr(node.operand, scope)  # type: ignore[attr-defined]
        elif type(node) is ast.Subscript:
            self.subscript(node, scope)
        elif type(node) is ast.Lambda:
            inner = Scope(scope)
            for p in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                inner.names[p.arg] = None
            self.expr(node.body, inner)
        elif isinstance(node, COMPS):
            self.comprehension(node, scope)
        elif type(node) is ast.NamedExpr:
            self.expr(node.value, scope)
            scope.names[node.target.id] = None
        else:
            if t is ast.JoinedStr:
                self.fstrings.append(node)  # type: ignore[arg-type]
            for f in _FIELDS.get(t) or _fields(t):  # child(), inlined
                v = getattr(node, f, None)
                if type(v) is list:
                    for e in v:
                        if isinstance(e, ast.AST) and type(e) is not K:
                            self.expr(e, scope)
                elif isinstance(v, ast.AST) and type(v) is not K:
                    self.expr(v, scope)

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                      scope: Scope) -> None:
        inner = Scope(scope)
        for i, gen in enumerate(node.generators):
            self.expr(gen.iter, scope if i == 0 else inner)
            self.bind(gen.target, inner)
            for cond in gen.ifs:
                self.expr(cond, inner)
        for part in ("elt", "key", "value"):
            v = getattr(node, part, None)
            if v is not None:
                self.expr(v, inner)

    def qualify(self, node: ast.AST, scope: Scope) -> str | None:
        """`xm.mark_step` -> torch_xla.core.xla_model.mark_step (None: not a name chain)."""
        attrs = []
        while type(node) is A:
            attrs.append(node.attr)
            node = node.value
        if type(node) is not N:
            return None
        q, _ = self.resolve(node.id, scope)
        if q is None:
            return None
        return ".".join([q, *reversed(attrs)]) if attrs else q

    def chain(self, node: ast.AST, scope: Scope) -> tuple[str | None, list[str], bool]:
        """(qualified name or None, attributes outermost first, bound by an import); walks a
        base that is not a name (a call, a subscript) as an expression."""
        attrs = []
        while type(node) is A:
            attrs.append(node.attr)
            node = node.value
        if type(node) is not N:
            self.expr(node, scope)
            return None, attrs, False
        q, imported = self.resolve(node.id, scope)
        if q is None or q.partition(".")[0] not in self.roots:
            return None, attrs, imported
        return ".".join([q, *reversed(attrs)]) if attrs else q, attrs, imported

    def ref(self, node: ast.AST, scope: Scope) -> None:
        q, _, _ = self.chain(node, scope)
        if q is not None:
            self.hit(self.rs.match_name(q), node)

    def subscript(self, node: ast.Subscript, scope: Scope) -> None:
        sl = node.slice
        if type(sl) is K and type(sl.value) is str and self.qualify(node.value, scope) == \
                "os.environ":
            self.hit(self.rs.match_env(sl.value), sl)
        self.expr(node.value, scope)
        self.expr(sl, scope)

    def call(self, node: ast.Call, scope: Scope) -> None:
        q, attrs, imported = self.chain(node.func, scope)
        args, kws = node.args, node.keywords
        if q is not None:
            self.hit(self.rs.match_name(q), node)
            if q in self.rs.calls:
                self.conditions(q, args, kws, node, scope)
            if q in ENV_CALLS and args and type(args[0]) is K and type(args[0].value) is str:
                self.hit(self.rs.match_env(args[0].value), args[0])
            if q == "torch.device" and args:
                self.device(args[0])
        elif attrs and not imported:
            meth = attrs[0]
            for rid, nargs in self.rs.methods.get(meth, ()):
                if nargs is None or (len(args) == nargs and not kws):
                    self.hit(rid, node)
            if meth == "to" and args:
                self.device(args[0])
        for kw in kws:
            if kw.arg in DEVICE_KW:
                self.device(kw.value)
            self.expr(kw.value, scope)
        for a in args:
            if type(a) is not K:
                self.expr(a, scope)

    def device(self, node: ast.AST) -> None:
        if type(node) is K and type(node.value) is str:
            self.hit(self.rs.match_device(node.value), node)

    def conditions(self, q: str, args: list[ast.expr], kws: list[ast.keyword], node: ast.AST,
                   scope: Scope) -> None:
        for c in self.rs.calls[q]:
            value, known = _argument(args, kws, c.arg, c.position)
            if not known:
                continue
            if c.kind == "missing":
                if value is None or (type(value) is K and value.value is None):
                    self.hit(c.rule, node)
            elif c.kind == "builtin":
                if type(value) is N and value.id in c.values and \
                        self.resolve(value.id, scope) == (value.id, False):
                    self.hit(c.rule, value)
            elif type(value) is K and _cond(c.kind, c.values, value.value):
                self.hit(c.rule, value)


def _cond(kind: str, values: tuple[str, ...], v: object) -> bool:
    if kind == "equals":
        return any(type(v) is type(e) and v == e for e in values)
    if type(v) is not str:
        return False
    if kind == "not_in":
        return v not in values
    return kind == "prefix" and v.startswith(values)


def _argument(args: list[ast.expr], kws: list[ast.keyword], name: str,
              position: int | None) -> tuple[ast.expr | None, bool]:
    """(value node or None, whether the call's arguments can be known statically)."""
    for kw in kws:
        if kw.arg == name:
            return kw.value, True
    starred = any(type(a) is S for a in args)
    if position is not None and position < len(args) and not starred:
        return args[position], True
    return None, not (starred or any(kw.arg is None for kw in kws))


# the fields of a node type that can hold expressions (not contexts, operators, names)
_SKIP = {"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level",
         "type_comment", "conversion", "kind", "value_is_str"}
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _fields(t: type[ast.AST]) -> tuple[str, ...]:
    got = _FIELDS[t] = tuple(f for f in t._fields if f not in _SKIP) or ("_none",)
    return got
