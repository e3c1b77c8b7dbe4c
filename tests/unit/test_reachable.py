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


def test_pip_s_configuration_is_read_as_pip_orders_it(tmp_path):
    import os

    from neuron_env.install.reachable import pip_configured

    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    home = tmp_path / "home"
    (home / ".config/pip").mkdir(parents=True)
    (home / ".config/pip/pip.conf").write_text(f"[global]\nfind-links = {a}\n")
    named = tmp_path / "named.conf"
    named.write_text(f"[global]\nfind-links = {b}\nextra-index-url = file:///srv/simple "
                     "https://example.invalid/simple\n")
    base = {"HOME": str(home), "XDG_CONFIG_DIRS": str(tmp_path / "none")}
    assert pip_configured(base)[0] == [str(a)]
    # a PIP_CONFIG_FILE that exists replaces the user's file and wins over it
    assert pip_configured({**base, "PIP_CONFIG_FILE": str(named)}) == (
        [str(b)], ["file:///srv/simple"])
    # the variable wins over every file; os.devnull reads no file at all
    assert pip_configured({**base, "PIP_CONFIG_FILE": str(named),
                           "PIP_FIND_LINKS": str(c)})[0] == [str(c)]
    assert pip_configured({**base, "PIP_CONFIG_FILE": os.devnull}) == ([], [])


def test_the_torch_line_asked_for_is_never_the_advice(tmp_path):
    """Issue 48 item 11: `--torch 2.13` given and torch 2.13 in the wheelhouse: the hint said
    "choose one with --torch 2.13"; the resolution failed on something else."""
    house = tmp_path / "house"
    wheel(house, "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    hint = torch_hint([str(house)], [], "2.13.0")
    assert "--torch 2.13" not in hint and "failed on another requirement" in hint
    hint = torch_hint([str(house)], [], "2.13.1")
    assert "--torch" not in hint and "add torch 2.13.1 wheels" in hint
