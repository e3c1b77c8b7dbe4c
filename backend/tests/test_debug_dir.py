"""neuron-env issue #45, finding 2: with TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS=1 the
emulator writes each graph's files under the debug directory (default /tmp/neuron_backend, a
predictable name): another user's pre-made directory, or links planted in it, must never
redirect those writes. The debug directory is made 0700 or used only when it is this user's
and no one else can write it; otherwise nothing is written and a warning says why."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

COMPILE = """
import warnings, torch
warnings.simplefilter("always")
x = torch.randn(3, 3, device="neuron", requires_grad=True)
torch.compile(lambda t: t.cos() * 2, backend="neuron")(x).sum().backward()
"""


def _compile(python: str, debug_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_NEURONX_")}
    env.update(TORCH_NEURONX_DEBUG_DIR=str(debug_dir),
               TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS="1")
    p = subprocess.run([python, "-c", COMPILE], capture_output=True, text=True, timeout=300,
                       env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim"
    v.write_text("KEEP\n")
    return v


def test_a_world_writable_debug_dir_with_planted_links_is_not_written(torch_python, tmp_path):
    victim = _victim(tmp_path)
    dbg = tmp_path / "neuron_backend"  # as another user leaves /tmp/neuron_backend
    for kind in ("forward", "backward"):
        g = dbg / f"graph_0000_{kind}"
        g.mkdir(parents=True)
        for name in ("fx_graph.py", "aten_ops.txt", "EMULATED"):
            (g / name).symlink_to(victim)
        g.chmod(0o777)
    dbg.chmod(0o777)
    p = _compile(torch_python, dbg)
    assert victim.read_text() == "KEEP\n"
    assert "compilation artifacts not kept" in p.stderr and "writable by group or others" \
        in p.stderr, p.stderr[-2000:]


def test_links_in_our_own_debug_dir_are_replaced_not_followed(torch_python, tmp_path):
    victim = _victim(tmp_path)
    dbg = tmp_path / "dbg"
    dbg.mkdir(mode=0o700)
    g = dbg / "graph_0000_forward"
    g.mkdir(mode=0o700)
    (g / "fx_graph.py").symlink_to(victim)
    (dbg / "graph_0001_backward").symlink_to(tmp_path)  # a directory link: not followed
    _compile(torch_python, dbg)
    assert victim.read_text() == "KEEP\n"
    assert not (g / "fx_graph.py").is_symlink() and "def forward" in (g / "fx_graph.py").read_text()
    assert not (tmp_path / "fx_graph.py").exists()


def test_a_missing_debug_dir_is_made_private(torch_python, tmp_path):
    dbg = tmp_path / "new" / "dbg"
    _compile(torch_python, dbg)
    assert oct(dbg.stat().st_mode & 0o777) == oct(0o700)
    assert sorted(p.name.split("_")[-1] for p in dbg.iterdir()) == ["backward", "forward"]
