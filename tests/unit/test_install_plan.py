"""Pure parts of install: the plan, provenance rules, pip report parsing, error diagnosis."""

from __future__ import annotations

import json

import pytest

from neuron_env.errors import ResolutionError
from neuron_env.install import installers, provenance
from neuron_env.install.plan import Inputs, make_plan
from neuron_env.install.report_parse import InstallError, Item, parse
from neuron_env.matrix import catalog

M = catalog.select("2.33")


def inputs(**kw) -> Inputs:
    base = dict(python="/v/bin/python", python_version="3.12.4", prefix="/v", os_id="ubuntu",
                os_version="26.04", arch="x86_64")
    base.update(kw)
    return Inputs(**base)


def test_default_is_the_newest_pair_with_every_requirement_and_its_index():
    p = make_plan(M, inputs())
    assert [(r.spec, r.index) for r in p.requirements] == [
        ("torch==2.14.0", "pytorch-cpu"), ("torch-neuronx==2.14.3.0.*", "neuron"),
        ("neuronx-cc==2.*", "neuron"), ("nki", "neuron")]
    assert p.index("neuron").url == "https://pip.repos.neuron.amazonaws.com"
    assert not p.forced and not p.warnings


def test_torch_213_and_the_key_changes_with_the_plan():
    a, b = make_plan(M, inputs()), make_plan(M, inputs(torch="2.13"))
    assert b.requirements[0].spec == "torch==2.13.0" and a.key != b.key
    assert make_plan(M, inputs()).key == a.key


def test_with_adds_the_companion_paired_with_the_plans_torch_from_torchs_index():
    p = make_plan(M, inputs(torch="2.13", companions=("torchvision", "torchaudio")))
    assert [(r.spec, r.index) for r in p.requirements][-2:] == [
        ("torchvision==0.28.*", "pytorch-cpu"), ("torchaudio>=2.11,<2.14", "pytorch-cpu")]
    assert make_plan(M, inputs(companions=("torchvision",))).requirements[-1].spec == \
        "torchvision==0.29.*"
    e = make_plan(M, inputs(backend="emulated", torch="2.13", companions=("torchvision",)))
    assert e.requirements[-1].spec == "torchvision==0.28.*" and e.key != make_plan(
        M, inputs(backend="emulated", torch="2.13")).key


def test_with_an_assumed_or_unknown_companion():
    p = make_plan(M, inputs(companions=("torchao",)))
    assert any("torchao: assumed pairing" in w for w in p.warnings)
    with pytest.raises(ResolutionError, match=r"no timm pairing for torch 2\.14"):
        make_plan(M, inputs(companions=("timm",)))


@pytest.mark.parametrize("torch", ["2.12", "3", "x.y"])
def test_unknown_torch_is_never_forced(torch):
    with pytest.raises(ResolutionError):
        make_plan(M, inputs(torch=torch, force=True))


def test_python_os_arch_refused_unless_forced():
    for bad in (dict(python_version="3.11.7"), dict(os_version="22.04"),
                dict(os_id="debian", os_version="12"), dict(arch="aarch64")):
        with pytest.raises(ResolutionError) as e:
            make_plan(M, inputs(**bad))
        assert "--force" in e.value.hint
        forced = make_plan(M, inputs(force=True, **bad))
        assert forced.forced and forced.requirements[1].name == "torch-neuronx"


def test_ubuntu_2404_warns_about_wheels():
    p = make_plan(M, inputs(os_version="24.04"))
    assert p.warnings and "26.04" in p.warnings[0]


def test_emulated_keeps_a_paired_torch_and_ignores_host_limits():
    p = make_plan(M, inputs(backend="emulated", python_version="3.11.7", os_id="debian",
                            os_version="12", installed={"torch": "2.13.0+cpu"}))
    assert p.pair.torch_minor == "2.13" and p.keep == ("torch 2.13.0+cpu",)
    assert [r.source for r in p.requirements] == ["index", "bundled"] and not p.forced
    assert p.warnings


def test_overrides_replace_the_index_url():
    p = make_plan(M, inputs(overrides={"neuron": ("http://mirror/simple", "--neuron-index-url")}))
    use = p.index("neuron")
    assert use.url == "http://mirror/simple" and use.matrix_url.startswith("https://pip.repos")


@pytest.mark.parametrize(("url", "index", "ok"), [
    ("https://pip.repos.neuron.amazonaws.com/torch-neuronx/x.whl",
     "https://pip.repos.neuron.amazonaws.com", True),
    ("https://pypi.org/packages/x.whl", "https://pip.repos.neuron.amazonaws.com", False),
    ("https://art.example.com/api/pypi/files/x.whl", "https://art.example.com/api/pypi/n/simple",
     True),
    ("http://127.0.0.1:8001/files/x.whl", "http://127.0.0.1:8002/simple", False),
    ("file:///idx/neuron/files/x.whl", "file:///idx/neuron/simple", True),
    ("file:///idx/neuron-evil/files/x.whl", "file:///idx/neuron/simple", False),
    ("file:///idx/public/files/x.whl", "file:///idx/neuron/simple", False),
    ("http://pip.repos.neuron.amazonaws.com/x.whl", "https://pip.repos.neuron.amazonaws.com",
     False),
    # pip reports a mirror's files without the credentials of the index URL
    ("https://art.example.com/files/x.whl", "https://ci:tok@art.example.com/simple", True),
    ("https://art.example.com:443/files/x.whl", "https://art.example.com/simple", True),
    ("https://evil.example.com/files/x.whl", "https://art.example.com@evil.example.com/simple",
     True),  # userinfo "art.example.com": the host really is evil.example.com, as pip sees it
    ("https://art.example.com/files/x.whl", "https://u:p@evil.example.com/simple", False),
])
def test_served_by(url, index, ok):
    assert provenance.served_by(url, index) is ok


def _item(name, version, url, direct=False):
    return Item(name, version, url, "0" * 64, (), direct)


def test_problems_catch_foreign_and_placeholder_packages():
    p = make_plan(M, inputs(overrides={"neuron": ("file:///i/neuron/simple", "x")}))
    items = [_item("torch-neuronx", "2.14.3.0.99", "file:///i/public/files/t.whl"),
             _item("nki", "0.0.1", "file:///i/neuron/files/nki.whl"),
             _item("neuronx-cc", "2.22.1.0", "file:///i/neuron/files/cc.whl"),
             _item("filelock", "3.0", "file:///i/public/files/f.whl")]
    probs = provenance.problems(items, p, M)
    assert len(probs) == 2
    assert "not from the neuron index" in probs[0] and "PLACEHOLDER" in probs[1]
    assert [i.name for i in provenance.foreign_governed(items, p, M)] == ["torch-neuronx"]


def test_wheelhouse_counts_as_chosen_source():
    p = make_plan(M, inputs(find_links=("/wh",)))
    it = _item("torch-neuronx", "2.14.3.0.1", "file:///wh/torch_neuronx.whl")
    assert provenance.problems([it], p, M) == []
    assert provenance.origin_of(it, p, M) == ("wheelhouse", "file:///wh")


def test_parse_pip_report():
    doc = {"version": "1", "install": [{
        "metadata": {"name": "nki", "version": "0.3.0", "requires_dist": ["numpy"]},
        "download_info": {"url": "file:///x/nki.whl",
                          "archive_info": {"hash": "sha256=" + "a" * 64}},
        "is_direct": False}]}
    (it,) = parse(json.dumps(doc))
    assert it.sha256 == "a" * 64 and it.requires == ("numpy",)
    assert it.lock_line() == f"nki @ file:///x/nki.whl --hash=sha256:{'a' * 64}"
    with pytest.raises(InstallError):
        parse("{not json")
    with pytest.raises(InstallError):
        parse(json.dumps({"install": [{"metadata": {}}]}))


@pytest.mark.parametrize(("output", "needle"), [
    ("OSError: [Errno 28] No space left on device", "no space left"),
    ("Failed to establish a new connection: [Errno 111] Connection refused", "could not be"),
    ("ERROR: No matching distribution found for torch-neuronx==2.14.3.0.*",
     "no index offers torch-neuronx==2.14.3.0.*"),
    ("THESE PACKAGES DO NOT MATCH THE HASHES", "hash"),
    ("zipfile.BadZipFile: Bad CRC-32 for file", "corrupt"),
    ("OSError: [Errno 30] Read-only file system", "read-only"),
    ("something odd\nfinal line", "final line"),
])
def test_diagnose(output, needle):
    what, fix = installers.diagnose(output)
    assert needle in what and fix


def test_with_credentials_puts_the_index_userinfo_back_on_its_own_host_only():
    idx = ["https://ci:tok@art.example.com/api/pypi/neuron/simple", "file:///idx/pytorch/simple"]
    w = provenance.with_credentials
    assert w("https://art.example.com/files/x.whl", idx) == \
        "https://ci:tok@art.example.com/files/x.whl"
    assert w("https://other.example.com/files/x.whl", idx) == \
        "https://other.example.com/files/x.whl"
    assert w("file:///idx/pytorch/files/t.whl", idx) == "file:///idx/pytorch/files/t.whl"
    assert w("https://me:x@art.example.com/y.whl", idx) == "https://me:x@art.example.com/y.whl"
