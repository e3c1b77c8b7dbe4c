"""install/reachable.py: which torch versions the local sources offer (files only)."""

from __future__ import annotations

from neuron_env.install.reachable import offered, torch_hint


def wheel(d, name):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(b"")


def test_find_links_and_file_indexes_newest_first(tmp_path):
    house = tmp_path / "house"
    wheel(house, "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    wheel(house, "torchvision-0.28.0-cp311-cp311-manylinux_2_28_x86_64.whl")
    wheel(house, "not-a-wheel.whl")
    page = tmp_path / "idx/simple/torch"
    page.mkdir(parents=True)
    (page / "index.html").write_text('<a href="../../files/torch-2.14.0%2Bcpu-py3-none-any.whl'
                                     '#sha256=ab">x</a>')
    got = offered("torch", [str(house)], [(tmp_path / "idx/simple").as_uri(),
                                          "https://download.pytorch.org/whl/cpu"])
    assert list(got) == ["2.14.0+cpu", "2.13.0+cpu"]
    assert got["2.13.0+cpu"] == [str(house)]
    hint = torch_hint([str(house)], [], "2.14.0")
    assert hint == (f"torch reachable offline: 2.13.0+cpu ({house}); choose one with "
                    "--torch 2.13")


def test_nothing_offline_says_what_to_pass(tmp_path):
    assert "no --find-links given" in torch_hint([], [], "2.14.0")
    empty = tmp_path / "e"
    empty.mkdir()
    assert "offer no torch wheel: add torch 2.14.0 wheels" in torch_hint([str(empty)], [],
                                                                           "2.14.0")


def test_a_wheelhouse_pip_is_configured_with_is_said_as_the_exact_flags(tmp_path):
    house = tmp_path / "wheels"
    wheel(house, "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    hint = torch_hint([], [], "2.14.0", ([str(house)], []))
    assert hint.endswith(f"rerun with --torch 2.13 --find-links {house}")
    # given --find-links, pip's configuration is not what is said
    assert "pip's configuration" not in torch_hint([str(house)], [], "2.14.0",
                                                   ([str(house)], []))
