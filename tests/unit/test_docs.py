"""The documentation stays true to the tree (read from disk, nothing run):

- the Layers table in docs/architecture.md names exactly the package folders under neuron_env/
  (a package folder: a direct subdirectory holding at least one .py file; data-only folders such
  as schemas/ are not packages);
- every repository file the code or the docs cite exists: markdown links (relative to the doc,
  with their #anchor checked against the target's headings), repository paths such as
  `docs/...md` or `neuron_env/...py` (relative to the repository root), and bare upper-case
  markdown names such as README.md (in the citing file's folder or one above it);
- README.md stays the front door: at most 250 lines, and it links every page in docs/.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "neuron_env"
DOCS = REPO / "docs"
README_MAX_LINES = 250

# Where citations are looked for: code (comments, docstrings) and documentation.
CODE_ROOTS = ("neuron_env", "backend", "scripts", "benchmarks", "tests", ".ci")
CODE_SUFFIXES = {".py", ".sh", ".yaml", ".yml", ".hcl", ".toml", ""}
SKIP_PARTS = {"fixtures", "__pycache__", ".venv", ".git", "build", "dist", ".pytest_cache"}
# A repository path starts with one of the repository's top-level folders.
TOP = "|".join(re.escape(t) for t in ("neuron_env", "backend", "scripts", "benchmarks", "tests",
                                       "matrices", "docs", ".ci"))
REPO_PATH = re.compile(rf"(?<![\w./-])((?:{TOP})/[\w./-]*[\w/])(?!\.?[\w/<{{*@\[-])")
BARE_MD = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_-]*\.md)\b")
OUTSIDE = re.compile(r"(?<![\w./:-])(/[\w.-]+(?:/[\w.-]+)+\.md)\b")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MD_REF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def package_folders() -> set[str]:
    return {d.name for d in PKG.iterdir()
            if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))}


def architecture_rows() -> set[str]:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert "\n## Layers\n" in text, "docs/architecture.md lost its '## Layers' section"
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([\w.-]+)/` \|", section, re.M))


def test_architecture_table_lists_exactly_the_package_folders() -> None:
    folders, rows = package_folders(), architecture_rows()
    missing, extra = sorted(folders - rows), sorted(rows - folders)
    assert not missing and not extra, (
        "docs/architecture.md's Layers table must have one row per package folder under "
        f"neuron_env/: folders with no row: {missing}; rows with no such folder: {extra}")


def _walk(root: Path) -> Iterator[Path]:
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(REPO).parts
        if p.is_file() and not SKIP_PARTS.intersection(rel[:-1]) and \
                not any(x.endswith(".egg-info") for x in rel):
            yield p


def code_files() -> list[Path]:
    out = []
    for top in CODE_ROOTS:
        root = REPO / top
        if root.is_dir():
            out += [p for p in _walk(root) if p.suffix in CODE_SUFFIXES and p.suffix != ".md"]
    # this file names missing files on purpose (the scanner's own test below)
    return [p for p in out if p != Path(__file__).resolve()]


def doc_files() -> list[Path]:
    docs = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]
    for top in ("backend", "matrices", "neuron_env"):
        docs += [p for p in _walk(REPO / top) if p.suffix == ".md"]
    return [p for p in docs if p.is_file()]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(md: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", md.read_text(encoding="utf-8"), flags=re.S)
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def _bare_exists(name: str, citing: Path) -> bool:
    folder = citing.parent
    while True:
        if (folder / name).exists():
            return True
        if folder == REPO:
            return (DOCS / name).exists()
        folder = folder.parent


def _link_problem(target: str, doc: Path) -> str | None:
    if SCHEME.match(target) or target.startswith("#"):
        if target.startswith("#") and target[1:] not in anchors(doc):
            return f"no heading for {target}"
        return None
    path, _, anchor = target.partition("#")
    dest = (doc.parent / path).resolve()
    if not dest.exists():
        return f"{target} does not exist"
    if REPO not in dest.parents and dest != REPO:
        return f"{target} is outside the repository"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{target}: no heading for #{anchor} in {dest.relative_to(REPO)}"
    return None


def prose_lines(p: Path, text: str) -> list[tuple[int, str]]:
    """The lines of `p` that may cite: a Python file's comments and docstrings (its code and
    other strings hold data, such as the paths a test builds); every line of anything else."""
    if p.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    out = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
           if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text, str(p))):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            first = node.body[0].lineno
            out += [(first + i, line) for i, line in
                    enumerate(node.body[0].value.value.splitlines())]
    return sorted(out)


def citations(p: Path) -> list[str]:
    """Every cited file of `p` that does not exist, as 'file:line: what'."""
    text = p.read_text(encoding="utf-8", errors="replace")
    rel = p.relative_to(REPO)
    problems = []
    for n, line in prose_lines(p, text):
        for m in REPO_PATH.finditer(line):
            if not (REPO / m.group(1)).exists():
                problems.append(f"{rel}:{n}: {m.group(1)} does not exist")
        for m in BARE_MD.finditer(line):
            if not _bare_exists(m.group(1), p):
                problems.append(f"{rel}:{n}: {m.group(1)} is not in the repository")
        for m in OUTSIDE.finditer(line):
            problems.append(f"{rel}:{n}: {m.group(1)} is outside the repository")
        if p.suffix == ".md":
            for target in MD_LINK.findall(line):
                why = _link_problem(target, p)
                if why:
                    problems.append(f"{rel}:{n}: {why}")
    if p.suffix == ".md":
        for target in MD_REF.findall(text):
            why = _link_problem(target, p)
            if why:
                problems.append(f"{rel}: reference link: {why}")
    return problems


def test_every_file_the_code_cites_exists() -> None:
    files = code_files()
    assert len(files) > 100, "the scan found too few code files: is the repository layout new?"
    assert [c for p in files for c in citations(p)] == []


def test_every_file_the_docs_cite_exists() -> None:
    docs = doc_files()
    assert DOCS / "architecture.md" in docs and REPO / "README.md" in docs
    assert [c for p in docs for c in citations(p)] == []


def test_the_citation_scanner_sees_what_it_must() -> None:
    """The patterns catch real citations and leave runtime paths and URLs alone."""
    line = ("see DESIGN.md, docs/nowhere.md, `neuron_env/guards/proc.py` and matrices/FORMAT.md; "
            "not matrices/neuron-<release>.toml, https://x.org/docs/TUNING.md, "
            "/var/log/neuron-env/ or <prefix>/tests/x.py")
    assert OUTSIDE.findall(line) == []
    assert [m.group(1) for m in REPO_PATH.finditer(line)] == [
        "docs/nowhere.md", "neuron_env/guards/proc.py", "matrices/FORMAT.md"]
    assert [m.group(1) for m in BARE_MD.finditer(line)] == ["DESIGN.md"]
    assert OUTSIDE.findall("summarised in /work/shared/notes.md.") == ["/work/shared/notes.md"]
    assert slug("Output and exit codes") == "output-and-exit-codes"
    assert slug("`--fix`: rewrites") == "--fix-rewrites"


def test_readme_is_the_front_door() -> None:
    readme = REPO / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move details to docs/")
    linked = {(readme.parent / t.partition("#")[0]).resolve()
              for t in MD_LINK.findall("\n".join(lines)) if not SCHEME.match(t)}
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ has no pages"
    unlinked = [p.name for p in pages if p.resolve() not in linked]
    assert unlinked == [], f"README.md links no docs page for: {unlinked}"
