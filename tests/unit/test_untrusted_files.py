"""Files someone else controls: matrix contradictions, FIFOs, /dev/zero, huge and deeply nested
files, absolute symlinks under --root. Each is a clear problem, never a hang, a MemoryError, a
RecursionError or the real host's file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from neuron_env.errors import MatrixError
from neuron_env.guards.files import FileProblem, read_bounded, resolve_in_root
from neuron_env.matrix.loader import load_file, parse_text
from neuron_env.probes.host import Root, make_root, probe_arch, probe_dmi, probe_os
from tests.helpers.cli import REPO
from tests.helpers.roots import make_root as make_fixture_root

GOOD = (REPO / "matrices" / "neuron-2.33.toml").read_text()


def _problems(text: str, name: str = "m.toml") -> list[str]:
    with pytest.raises(MatrixError) as ei:
        parse_text(text, name)
    return [p.render() for p in ei.value.problems]


def _bounded(fn, *a):
    """fn(*a) in a thread: a hang fails the test instead of blocking it."""
    out = {}

    def run():
        try:
            out["v"] = fn(*a)
        except BaseException as e:  # re-raised in the test's thread
            out["e"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), f"{fn.__name__} hung"
    if "e" in out:
        raise out["e"]
    return out.get("v")


@pytest.mark.parametrize(("mutate", "words"), [
    (lambda s: s.replace('requires = ">=3.12,<3.15"', 'requires = ">=3.15,<3.12"'),
     "python.requires]: <3.12,>=3.15 admits no Python version"),
    (lambda s: s.replace('torch_neuronx = "==2.13.3.0.*"',
                         'torch_neuronx = "==2.13.3.0.*"\npython = ">=3.13,<3.12"'),
     "pairs[1].python]: <3.12,>=3.13 admits no Python"),
    (lambda s: s.replace('torch_neuronx = "==2.13.3.0.*"',
                         'torch_neuronx = "==2.13.3.0.*"\npython = ">=3.8,<3.10"'),
     "shares no Python version with the release's range"),
    (lambda s: s.replace('torch_neuronx = "==2.13.3.0.*"', 'torch_neuronx = "==2.14.3.0.*"'),
     "two torch versions for one torch-neuronx family"),
    (lambda s: s.replace('release = "2.33"', 'release = "2.34"'),
     "release '2.34' in a file named for 2.33"),
    (lambda s: s.replace('name = "torch-neuronx"\nversion = "1.0"',
                         'name = "torch-neuronx"\nversion = "2.14.3.0.5"'),
     "torch-neuronx 2.14.3.0.5 is both a placeholder and a real version"),
])
def test_semantic_contradictions_are_refused(mutate, words):
    text = mutate(GOOD)
    assert text != GOOD
    found = _problems(text, "matrices/neuron-2.33.toml")
    assert any(words in p for p in found), found


def test_the_bundled_matrix_has_no_contradictions():
    parse_text(GOOD, "matrices/neuron-2.33.toml")


def test_deep_nesting_is_a_matrix_error():
    deep = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    assert any("nested too deeply" in p for p in _problems(GOOD + deep))
    deep = "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"
    assert any("nested too deeply" in p for p in _problems(GOOD + deep))


def test_fifo_dev_zero_and_huge_matrix_files(tmp_path):
    fifo = tmp_path / "m.toml"
    os.mkfifo(fifo)
    for path, words in ((fifo, "FIFO"), (Path("/dev/zero"), "device"),
                        (tmp_path, "is a directory")):
        with pytest.raises(MatrixError) as ei:
            _bounded(load_file, path)
        assert words in ei.value.problems[0].render()
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(64 << 20)  # sparse: costs no disk
    with pytest.raises(MatrixError) as ei:
        load_file(big)
    assert "larger than" in ei.value.problems[0].render()


def test_read_bounded_refuses_what_is_not_a_regular_file(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert read_bounded(tmp_path / "f", 10) == b"x" * 10
    with pytest.raises(FileProblem, match="larger than 9"):
        read_bounded(tmp_path / "f", 9)
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 9)


def test_host_files_fifo_and_device_are_problems_not_hangs(tmp_path):
    root = make_fixture_root(tmp_path / "r", os="ubuntu-24.04")
    (root / "etc/os-release").unlink()
    os.mkfifo(root / "etc/os-release")
    dmi = root / "sys/devices/virtual/dmi/id"
    dmi.mkdir(parents=True, exist_ok=True)
    for f in ("sys_vendor", "product_name"):
        (dmi / f).unlink(missing_ok=True)
        os.mkfifo(dmi / f)
    r = make_root(str(root))
    facts = _bounded(probe_os, r)
    assert facts.id is None and "FIFO" in facts.error and "cannot tell the OS" in facts.error
    assert _bounded(probe_dmi, r).sys_vendor is None
    (root / "etc/os-release").unlink()
    (root / "etc/os-release").symlink_to("/dev/zero")
    # under --root that is the IMAGE's /dev/zero (absent here): usr/lib/os-release answers
    assert _bounded(probe_os, r).id == "ubuntu"
    # on the live host (no --root) the link is followed to the real device: refused, not read
    facts = _bounded(probe_os, Root(root, explicit=False))
    assert facts.id is None and "a device, not a regular file" in facts.error


def test_absolute_symlinks_resolve_inside_the_root_as_chroot_would(tmp_path):
    root = make_fixture_root(tmp_path / "r", os="amzn-2023")  # not this machine's OS
    real = (root / "etc/os-release").read_text()
    (root / "usr/lib").mkdir(parents=True, exist_ok=True)
    (root / "usr/lib/os-release").write_text(real)
    (root / "etc/os-release").unlink()
    (root / "etc/os-release").symlink_to("/usr/lib/os-release")  # as on real systems
    facts = probe_os(make_root(str(root)))
    assert facts.id == "amzn", facts  # the image's, not this machine's /usr/lib/os-release
    (root / "etc/os-release").unlink()
    (root / "etc/os-release").symlink_to("/etc/../../../../etc/hostname-not-here")
    assert resolve_in_root(root, "etc/os-release") == root / "etc/hostname-not-here"
    (root / "bin").mkdir(exist_ok=True)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    for p in ("usr/bin/env", "bin/sh"):
        (root / p).unlink(missing_ok=True)
    (root / "usr/bin/env").symlink_to("/bin/sh-absent")
    arch, _src = probe_arch(make_root(str(root)))
    assert arch is None  # never the host's /bin/sh
    loop = root / "etc/loop"
    loop.symlink_to("/etc/loop")
    with pytest.raises(FileProblem, match="too many levels"):
        resolve_in_root(root, "etc/loop")


def test_matrix_import_refuses_fifo_and_deep_json(tmp_path):
    from neuron_env.matrix.importer import load_manifest

    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    for path, words in ((fifo, "FIFO"), (deep, "nested too deeply")):
        with pytest.raises(MatrixError) as ei:
            _bounded(load_manifest, path)
        assert words in ei.value.problems[0].render()
