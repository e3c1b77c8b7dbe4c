"""scan: every rule on fixture files (positives and negatives), name resolution, encodings,
syntax errors, gitignore/venv/symlink handling, the documents against their schemas."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from neuron_env.commands import scan as cmd
from neuron_env.errors import ConfigurationError, UsageError
from neuron_env.report.render import render
from neuron_env.scan import gitignore, pyscan, ruleset, walk

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "scan" / "project"
SARIF = json.loads((REPO / "tests" / "fixtures" / "sarif-schema-2.1.0.json").read_text())
SCHEMA = json.loads((REPO / "neuron_env" / "schemas" / "scan.schema.json").read_text())
EXPECT = re.compile(r"#\s*expect:\s*([a-z]+\.\w+(?:,\s*[a-z]+\.\w+)*)")
RS = ruleset.load(ruleset.locate("2.33"))
ALL = set(RS.rules)
DOCKERFILE = {(3, "xla.bf16_env"), (5, "xla.env"), (6, "xla.parallel_compile")}


def scan(paths, **kw):
    return cmd.run([str(p) for p in paths], **kw).body


def hits(src: str, package: str = "") -> list[tuple[int, str]]:
    an = pyscan.Analyzer(RS, ALL, src, package)
    return sorted((n.lineno, r) for r, n in an.run(ast.parse(src)))


def expected(path: Path) -> list[tuple[int, str]]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = EXPECT.search(line)
        if m:
            out += [(n, r.strip()) for r in m.group(1).split(",") if r.strip()]
    return sorted(out)


@pytest.mark.parametrize("name", ["xla_train.py", "beta_unsupported.py", "compile_cuda.py",
                                  "relpkg/torch_xla/core/helpers.py", "run_xla.sh"])
def test_fixture_gives_exactly_the_marked_findings(name, monkeypatch):
    monkeypatch.chdir(FIX)
    doc = scan([name], exit_zero=True)
    got = sorted((f["line"], f["rule"]) for f in doc["findings"])
    assert got == expected(FIX / name)


def test_every_rule_has_a_positive_fixture_and_real_docs():
    doc = scan([FIX], exit_zero=True)
    fired = {f["rule"] for f in doc["findings"]}
    assert ALL - fired == {"scan.syntax", "scan.encoding"}  # those two: test_odd_files
    for r in RS.rules.values():
        assert r.docs.startswith(("https://awsdocs-neuron.readthedocs-hosted.com/",
                                  "https://github.com/aws-neuron/")), r.id


def test_dockerfile_env_and_commands_and_the_text_view(monkeypatch):
    monkeypatch.chdir(FIX)
    out = cmd.run(["Dockerfile"])
    assert {(f["line"], f["rule"]) for f in out.body["findings"]} == DOCKERFILE
    text = out.view(out.body)
    assert text.startswith("Dockerfile\n  Dockerfile:3:5: error   xla.bf16_env  XLA-only bf16")
    assert "      -> torch.autocast(" in text and "3 finding(s) (1 error, 2 warning" in text


def test_names_resolve_through_aliases_and_shadowing():
    src = ("import torch_xla.core.xla_model as xm\n"
           "from torch_xla.core.xla_model import mark_step as ms\n"
           "ms()\n"
           "def f():\n    xm = 1\n    return xm.mark_step()\n"
           "def g():\n    import torch_xla.core.xla_model as xm\n    xm.mark_step()\n"
           "xm = get_something()\n"
           "xm.mark_step()\n"
           "[xm.mark_step() for xm in things]\n"
           "h = lambda xm: xm.mark_step()\n")
    assert hits(src) == [(1, "xla.import"), (2, "xla.import"), (3, "xla.mark_step"),
                         (8, "xla.import"), (9, "xla.mark_step")]


def test_fallback_none_keeps_the_import_and_functions_see_final_module_names():
    src = ("try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n"
           "    xm = None\n"
           "def step():\n    xm.mark_step()\n")
    assert (6, "xla.mark_step") in hits(src)


def test_relative_import_needs_the_package():
    src = "from .core import xla_model as xm\nxm.mark_step()\n"
    assert hits(src, package="torch_xla") == [(1, "xla.import"), (2, "xla.mark_step")]
    assert hits(src, package="mypkg") == []


def test_walk_respects_gitignore_venvs_and_symlinks(tmp_path):
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("excluded.py\n")
    (root / ".gitignore").write_text("build/\n*.gen.py\n!keep.gen.py\n/anchored.py\n")
    for rel in ("a.py", "build/b.py", "x.gen.py", "keep.gen.py", "anchored.py",
                "sub/anchored.py", "excluded.py", "venv/lib/c.py", "env2/site-packages/d.py",
                "tools/run", "notes.txt"):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\necho\n" if rel == "tools/run" else "import torch_xla\n")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "outside.py").write_text("import torch_xla\n")
    (root / "link_out.py").symlink_to(tmp_path / "outside.py")
    (root / "linkdir").symlink_to(root / "sub", target_is_directory=True)
    tasks, skipped = walk.discover([str(root)], cwd=str(root))
    assert sorted((t.rel, t.kind) for t in tasks) == [
        ("a.py", "python"), ("keep.gen.py", "python"), ("sub/anchored.py", "python"),
        ("tools/run", "shell")]
    reasons = {s["path"]: s["reason"] for s in skipped}
    assert "venv" in reasons and "env2/site-packages" in reasons
    assert "out of the scanned tree" in reasons["link_out.py"]
    assert "not followed" in reasons["linkdir"]


def test_gitignore_patterns():
    ign = gitignore.Ignores().extend("", ["*.log", "/top", "docs/**/gen", "a?c", "[xy].py",
                                          "\\#hash", "dir/"]).extend("pkg", ["local.py"])
    assert ign.ignored("deep/x.log", False) and ign.ignored("top", False)
    assert not ign.ignored("sub/top", False)
    assert ign.ignored("docs/a/b/gen", False) and ign.ignored("docs/gen", False)
    assert ign.ignored("abc", False) and ign.ignored("x.py", False)
    assert not ign.ignored("z.py", False) and ign.ignored("#hash", False)
    assert ign.ignored("dir", True) and not ign.ignored("dir", False)
    assert ign.ignored("pkg/local.py", False) and not ign.ignored("local.py", False)


def test_odd_files_are_scanned_or_skipped_never_crash(tmp_path):
    files = {
        "latin1.py": "# -*- coding: latin-1 -*-\nname = 'café'\nimport torch_xla\n"
                     .encode("latin-1"),
        "utf16.py": "import torch_xla\nx = 'é'\n".encode("utf-16"),
        "bad_bytes.py": b"x = '\xff\xfe\xfa'\nimport torch_xla\n",
        "bom.py": b"\xef\xbb\xbfimport torch_xla\n",
        "broken.py": b"def f(:\n    pass\n",
        "nul.py": b"import torch_xla\n\x00\x00binary",
        "unicode_col.py": "s = 'ééé'; import torch_xla\n".encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(walk.MAX_BYTES + 1)
    doc = scan([tmp_path], exit_zero=True)
    by = {}
    for f in doc["findings"]:
        by.setdefault(Path(f["path"]).name, []).append((f["line"], f["column"], f["rule"]))
    assert by["latin1.py"] == [(3, 1, "xla.import")]
    assert by["utf16.py"] == [(1, 1, "scan.encoding"), (1, 1, "xla.import")]
    assert by["bad_bytes.py"] == [(1, 1, "scan.encoding"), (2, 1, "xla.import")]
    assert by["bom.py"] == [(1, 1, "xla.import")]
    assert [r for _, _, r in by["broken.py"]] == ["scan.syntax"]
    assert by["unicode_col.py"] == [(1, 12, "xla.import")]  # characters, not UTF-8 bytes
    skipped = {Path(s["path"]).name: s["reason"] for s in doc["files"]["skipped"]}
    assert skipped["nul.py"].startswith("binary") and "MiB" in skipped["big.py"]
    jsonschema.validate(doc, SCHEMA)


def test_select_ignore_fail_on_and_exit_codes(tmp_path):
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.is_available()\n")
    assert scan([tmp_path])["exit_code"] == 0                       # info only
    assert scan([tmp_path], fail_on="info")["exit_code"] == 1
    assert scan([tmp_path], fail_on="info", exit_zero=True)["exit_code"] == 0
    assert scan([tmp_path], select=["xla"])["findings"] == []
    assert scan([tmp_path], ignore=["cuda.api"])["findings"] == []
    with pytest.raises(UsageError, match="no such rule"):
        scan([tmp_path], select=["xla.nonsense"])
    with pytest.raises(UsageError, match="no such file"):
        scan([tmp_path / "missing"])
    with pytest.raises(UsageError, match="no scan rules"):
        scan([tmp_path], matrix="1.0")


def test_rules_are_data_a_new_release_is_a_new_file(tmp_path):
    text = (ruleset.RULES_DIR / "neuron-2.33.toml").read_text()
    text = text.replace('release = "2.33"', 'release = "9.99"')
    start = text.index('[[rule]]\nid = "beta.torchao"')
    end = text.index("[[rule]]", start + 10)
    (tmp_path / "neuron-9.99.toml").write_text(text[:start] + text[end:])
    (tmp_path / "a.py").write_text("import torchao\n")
    doc = scan([tmp_path / "a.py"], matrix=str(tmp_path / "neuron-9.99.toml"))
    assert doc["matrix"]["release"] == "9.99" and doc["findings"] == []
    assert scan([tmp_path / "a.py"])["findings"][0]["rule"] == "beta.torchao"
    (tmp_path / "bad.toml").write_text('release = "1"\n[[rule]]\nid = "x.y"\n')
    with pytest.raises(ConfigurationError):
        scan([tmp_path / "a.py"], matrix=str(tmp_path / "bad.toml"))


def test_json_and_list_rules_validate_against_the_schema():
    jsonschema.validate(scan([FIX], exit_zero=True), SCHEMA)
    body = cmd.list_rules(None, [], [], "json").body
    jsonschema.validate(body, SCHEMA)
    assert {r["id"] for r in body["rules"]} == ALL
    assert "xla.device" in cmd.list_rules(None, ["xla"], [], "text").view(body)


def test_sarif_is_valid_sarif_2_1_0(monkeypatch):
    monkeypatch.chdir(FIX)
    d = cmd.run(["."], exit_zero=True)
    doc = json.loads(render(d, "sarif"))  # a format of the one renderer (report/formats.py)
    jsonschema.validators.validator_for(SARIF)(SARIF).validate(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert all(r["helpUri"].startswith("https://") and r["defaultConfiguration"]["level"]
               in ("error", "warning", "note") for r in rules)
    res = run["results"]
    assert len(res) == len(d.body["findings"]) > 0
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in res}
    assert "xla_train.py" in uris and not any(u.startswith("/") for u in uris)
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in res)


def test_fix_rewrites_a_copy_and_the_result_rescans_clean(tmp_path):
    shutil.copytree(FIX, tmp_path / "p")
    target = tmp_path / "p" / "xla_train.py"
    mode = 0o751
    os.chmod(target, mode)
    before = scan([target], exit_zero=True)
    body = scan([target], mode="fix", exit_zero=True)
    assert body["fixes"]["applied"] == before["counts"]["fixable"] == 10
    ast.parse(target.read_text())
    assert os.stat(target).st_mode & 0o777 == mode
    fixed = {"xla.device", "xla.process_group", "xla.init_method", "xla.device_string",
             "xla.optimizer_step"}
    left = {f["rule"] for f in body["findings"]}
    assert fixed <= {f["rule"] for f in before["findings"]} and not fixed & left
    src = target.read_text()
    assert 'torch.device("neuron")' in src and "opt.step()" in src
    assert 'init_process_group("neuron", init_method="env://")' in src


def test_fix_adds_import_torch_after_docstring_and_future(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""Doc."""\nfrom __future__ import annotations\n'
                 "from torch_xla.core.xla_model import xla_device\nd = xla_device()\n")
    scan([f], mode="fix", exit_zero=True)
    assert f.read_text().splitlines() == [  # and the import the rewrite left unused goes
        '"""Doc."""', "from __future__ import annotations", "import torch",
        'd = torch.device("neuron")']


def _backtracking_reference(pat: str) -> str:
    """The old regex translation (backtracking, but right on small inputs), git's `**` rule."""
    import re

    out, i = [], 0
    while i < len(pat):
        if pat.startswith("**/", i) and (i == 0 or pat[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            j = i
            while j < len(pat) and pat[j] == "*":
                j += 1
            whole = (i == 0 or pat[i - 1] == "/") and (j == len(pat) or pat[j] == "/")
            out.append(".*" if whole else "[^/]*")
            i = j
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    return "".join(out)


def test_linear_glob_matcher_agrees_with_a_regex_translation():
    """The NFA (what hostile patterns run on) against re on small random cases."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=600, deadline=None)
    @given(st.text("ab/*?", min_size=1, max_size=8), st.text("ab/", max_size=10))
    def check(pat, path):
        toks = gitignore.compile_glob(pat)
        nfa = gitignore.Glob(tuple(toks))._nfa(path)
        fast = gitignore.Glob.of(toks).match(path)
        ref = re.fullmatch(_backtracking_reference(pat), path, re.DOTALL) is not None
        assert nfa == ref == fast, (pat, path, nfa, ref, fast)
    check()


def test_gitignore_classes_and_bad_patterns():
    ign = gitignore.Ignores().extend("", ["[a-c]x", "[!0-9]y", "[[:digit:]]z", "[]]w"])
    assert ign.ignored("bx", False) and not ign.ignored("dx", False)
    assert ign.ignored("ay", False) and not ign.ignored("5y", False)
    assert ign.ignored("7z", False) and ign.ignored("]w", False)
    warnings: list[tuple[int, str]] = []
    gitignore.Ignores().extend("", ["ok", "[z-a]", "[[:nope:]]"],
                               lambda n, why: warnings.append((n, why)))
    assert [n for n, _ in warnings] == [2, 3] and "reversed" in warnings[0][1]


def test_batched_patterns_give_the_verdicts_of_one_by_one_matching():
    """Runs of simple patterns are merged into one alternation: same verdicts as matching
    each pattern in turn (the last match wins, negations included)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pats = st.lists(st.text("ab/*?!", min_size=1, max_size=5), min_size=1, max_size=6)

    @settings(max_examples=300, deadline=None)
    @given(pats, st.text("ab/", min_size=1, max_size=8), st.booleans())
    def check(lines, path, is_dir):
        merged = gitignore.Ignores().extend("", lines)
        one = gitignore.Ignores()
        for line in lines:  # one extend per line: nothing is merged
            one = one.extend("", [line])
        assert merged.ignored(path, is_dir) == one.ignored(path, is_dir), (lines, path)
    check()
    big = gitignore.Ignores().extend("", [f"*.x{i}" for i in range(20_000)])
    assert len(big.patterns) == 1 and big.ignored("a/b.x19999", False)
