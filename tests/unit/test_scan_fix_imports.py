"""`scan --fix`/`--diff` removes the imports its rewrite leaves unused, and only those (#48)."""

from __future__ import annotations

import ast

from neuron_env.commands import scan as cmd

SRC = '''import os
import torch_xla
import torch_xla.core.xla_model as xm
import sys, json
from torch_xla.core.xla_model import xla_device as dev  # the old way
from torch_xla.core import xla_model as still_used

d = torch_xla.core.xla_model.xla_device()
e = xm.xla_device()
f = dev(1)
print(sys.argv, still_used.get_ordinal())


def g():
    try:
        from torch_xla.core.xla_model import xla_device
    except ImportError:
        raise
    return xla_device()
'''


def test_fix_removes_the_imports_it_left_unused_and_only_those(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(SRC)
    body = cmd.run([str(f)], mode="fix", exit_zero=True).body
    assert body["fixes"]["applied"] == 4
    new = f.read_text()
    ast.parse(new)
    lines = new.splitlines()
    assert "import torch_xla" not in lines and "import torch_xla.core.xla_model as xm" not in new
    assert "xla_device as dev" not in new and "from torch_xla.core.xla_model" not in new
    # unused before the rewrite (os, json), or still used (sys, still_used): kept
    assert {"import os", "import sys, json",
            "from torch_xla.core import xla_model as still_used"} <= set(lines)
    assert "        pass" in lines  # the try block the removal emptied
    assert not {x["rule"] for x in body["findings"]} & {"xla.device"}


def test_diff_shows_the_removed_import(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("import torch_xla\nd = torch_xla.core.xla_model.xla_device()\n")
    diff = cmd.run(["t.py"], mode="diff", exit_zero=True).body["diff"]
    assert "-import torch_xla\n" in diff and '+d = torch.device("neuron")' in diff
