"""scan skips the analysis of a file that holds none of the words a finding starts from
(pyscan.needles): the findings, fixes and skips must be exactly those of analysing every file.
Checked on a varied corpus: the scan fixtures, this repository's own Python, and snippets that
reach a rule by the indirect ways (aliases, relative imports, NFKC identifiers, methods on
anything, device strings, the environment, shadowed builtins, carriage returns)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from neuron_env.scan import engine, pyscan, ruleset, walk

REPO = Path(__file__).resolve().parents[2]
SNIPPETS = {
    "plain.py": "def add(a, b):\n    return a + b\n",
    "plain_syntax_error.py": "def add(a, b)\n    return a + b\n",
    "alias.py": "import torch_xla.core.xla_model as xm\n\ndef f():\n    return xm.xla_device()\n",
    "late_alias.py": "def f():\n    return X.mark_step()\n\nimport torch_xla.core.xla_model as X\n",
    "nfkc.py": "import \uff54\uff4f\uff52\uff43\uff48_xla\n",
    "method_only.py": "def move(model):\n    return model.cuda()\n",
    "to_device.py": "def move(model):\n    return model.to('xla')\n",
    "device_kw.py": "def make(f):\n    return f(device='xla:0')\n",
    "map_location.py": "def load(f, p):\n    return f(p, map_location='xla')\n",
    "env.py": "from os import environ as E\nE['XLA_USE_BF16'] = '1'\n",
    "env_getenv.py": "import os\nx = os.getenv('PJRT_DEVICE')\n",
    "builtin.py": "import torch\nx = torch.zeros(3, dtype=float)\n",
    "shadowed_builtin.py": "import torch\nfloat = int\nx = torch.zeros(3, dtype=float)\n",
    "cr.py": "import torch_xla\r\nx = 1\r\n",
    "lone_cr.py": "import torch_xla\rx = 1\r",
    "words_in_comments.py": "# move it to the device\nx = 1\n",
    "compile.py": "import torch\n\n@torch.compile\ndef f(x):\n    return x\n",
    "dunder.py": "m = __import__('torch_xla')\n",
}
RELATIVE = {"torch_xla/__init__.py": "", "torch_xla/core/__init__.py": "",
            "torch_xla/core/helpers.py": "from . import xla_model\nxla_model.mark_step()\n"}


def _corpus(tmp_path: Path) -> list[walk.Task]:
    for name, text in {**SNIPPETS, **RELATIVE}.items():
        p = tmp_path / "snippets" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode())
    paths = [str(tmp_path / "snippets"), str(REPO / "tests" / "fixtures" / "scan"),
             str(REPO / "neuron_env"), str(REPO / "benchmarks")]
    tasks, _ = walk.discover(paths, cwd=str(tmp_path))
    return tasks


@pytest.mark.parametrize("release", sorted(ruleset.available()))
@pytest.mark.parametrize("want_fix", [False, True])
def test_the_prefilter_changes_no_finding_fix_or_skip(tmp_path, release, want_fix):
    tasks = _corpus(tmp_path)
    rules = ruleset.locate(release)
    rs = ruleset.load(rules)
    engine.init(str(rules), frozenset(rs.rules), want_fix)
    filtered = [engine.scan_task(t) for t in tasks]
    skipped = sum(not pyscan.may_hit(engine._STATE["needles"], Path(t.path).read_text(
        encoding="utf-8", errors="replace"), t.package) for t in tasks if t.kind == "python")
    engine._STATE["needles"] = re.compile("")  # matches every text: every file analysed
    everything = [engine.scan_task(t) for t in tasks]
    assert filtered == everything
    assert skipped >= 20, "the corpus must hold files the prefilter skips"
    assert sum(len(r["hits"]) for r in everything) >= 40


def test_a_file_without_any_needle_is_not_even_parsed_when_syntax_is_off(tmp_path):
    p = tmp_path / "plain_syntax_error.py"
    p.write_text(SNIPPETS["plain_syntax_error.py"])
    q = tmp_path / "xla_syntax_error.py"
    q.write_text("import torch_xla\n" + SNIPPETS["plain_syntax_error.py"])
    tasks, _ = walk.discover([str(tmp_path)], cwd=str(tmp_path))
    rules = ruleset.locate(None)
    rs = ruleset.load(rules)
    engine.init(str(rules), frozenset(rs.rules), False)
    both = {r["path"]: [h[0] for h in r["hits"]] for r in map(engine.scan_task, tasks)}
    assert both == {"plain_syntax_error.py": ["scan.syntax"],
                    "xla_syntax_error.py": ["scan.syntax"]}
    engine.init(str(rules), frozenset(rs.rules) - {"scan.syntax"}, False)
    assert [r["hits"] for r in map(engine.scan_task, tasks)] == [[], []]


@pytest.mark.parametrize("n,jobs", [(1, 2), (7, 2), (31, 2), (1000, 3), (9000, 8)])
def test_the_pool_ranges_cover_every_task_once_in_order(n, jobs):
    spans = engine._ranges(n, jobs)
    assert [i for a, b in spans for i in range(a, b)] == list(range(n))
    assert all(b - a <= 256 for a, b in spans)


def test_a_worker_range_rebuilds_the_records_of_scan_task(tmp_path):
    """What a pool worker sends back (packed, without the task's own fields) and the parent
    unpacks is scan_task's record, key for key, fixes included."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "scan"
    tasks, _ = walk.discover([str(fixtures)], cwd=str(tmp_path))
    rules = ruleset.locate(None)
    rs = ruleset.load(rules)
    engine._init_worker(str(rules), frozenset(rs.rules), True, tasks)
    packed = engine._scan_range((0, len(tasks)))
    rebuilt = [engine._unpack(t, p) for t, p in zip(tasks, packed, strict=True)]
    direct = [engine.scan_task(t) for t in tasks]
    assert [list(r) for r in rebuilt] == [list(r) for r in direct] and rebuilt == direct
    assert any(r["new_text"] for r in direct) and sum(len(r["hits"]) for r in direct) >= 40


@pytest.mark.parametrize("path,cwd", [
    ("/w/tree/a.py", "/w/repo"), ("/w/repo2/a.py", "/w/repo"), ("/w/repo/a.py", "/w/repo"),
    ("/w/repo/..a.py", "/w/repo"), ("/w/repo/../x/a.py", "/w/repo"), ("/w/repo", "/w/repo"),
    ("//w/repo/a.py", "/w/repo"), ("/w/repo/b/a.py", "//w/repo"), ("/a.py", "/"),
    ("/w/tree/a.py", "/w/repo/"), ("/w//tree/a.py", "/w/repo")])
def test_the_reported_path_is_relpaths_answer(path, cwd):
    """walk.display skips os.path.relpath where it knows its answer (below cwd: the rest of
    the path; outside it: the path itself); wherever it does, it is relpath's."""
    rel = os.path.relpath(path, cwd)
    want = Path(path).as_posix() if rel.startswith("..") else Path(rel).as_posix()
    assert walk.display(path, cwd) == want
