"""Provenance on shared mirror hosts: every placement of the three indexes (neuron, pytorch-cpu,
the public one) on one, two or three loopback hosts, with a hostile public index that offers
higher versions of the Neuron packages. A file is credited to the index whose path holds it;
a file on a shared host under no index's path is refused as ambiguous."""

from __future__ import annotations

import itertools

import pytest

from neuron_env.install import mirrors, provenance
from neuron_env.install.plan import Inputs, make_plan
from neuron_env.install.report_parse import Item
from neuron_env.matrix import catalog

M = catalog.select("2.33")
HOSTS = ["127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.2:8001"]
NAMES = ["neuron", "pytorch", "public"]


def _item(name, version, url):
    return Item(name, version, url, "0" * 64, (), False)


def _plan(urls: dict, env=None):
    p = make_plan(M, Inputs(python="/v/bin/python", python_version="3.12.4", prefix="/v",
                            os_id="ubuntu", os_version="26.04", arch="x86_64",
                            overrides={"neuron": (urls["neuron"], "x"),
                                       "pytorch-cpu": (urls["pytorch"], "x")}))
    env = {"PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": urls["public"], **(env or {})}
    return mirrors.with_mirrors(p, M, env)


def _layouts():
    """(host per index, whether neuron sits at its host's root) for every placement."""
    for hosts in itertools.product(range(3), repeat=3):
        for neuron_at_root in (False, True):
            yield hosts, neuron_at_root


@pytest.mark.parametrize(("hosts", "neuron_at_root"), list(_layouts()))
def test_every_placement_credits_each_file_to_its_own_index(hosts, neuron_at_root):
    base = {n: f"http://{HOSTS[h]}" + ("" if n == "neuron" and neuron_at_root else f"/{n}")
            for n, h in zip(NAMES, hosts, strict=True)}
    urls = {n: b + "/simple" for n, b in base.items()}
    p = _plan(urls)
    good = [_item("torch", "2.14.0+cpu", base["pytorch"] + "/files/torch.whl"),
            _item("torch-neuronx", "2.14.3.0.1", base["neuron"] + "/files/tn.whl"),
            _item("libneuronxla", "2.2.0", base["neuron"] + "/files/lx.whl"),
            _item("filelock", "3.0.0", base["public"] + "/files/filelock.whl")]
    assert provenance.problems(good, p, M) == [], urls
    assert provenance.origin_of(good[0], p, M)[0] == "pytorch-cpu"
    assert provenance.origin_of(good[1], p, M)[0] == "neuron"
    hostile = [_item("torch-neuronx", "2.14.3.0.999", base["public"] + "/files/tn.whl"),
               _item("libneuronxla", "2.999", base["public"] + "/files/lx.whl"),
               _item("torch", "2.14.0", base["public"] + "/files/torch.whl")]
    probs = provenance.problems(hostile, p, M)
    assert len(probs) == 3, (urls, probs)
    assert [i.name for i in provenance.foreign_governed(hostile, p, M)] == [
        "torch-neuronx", "libneuronxla", "torch"]


def test_a_file_elsewhere_on_a_shared_host_is_refused_with_the_way_out():
    urls = {"neuron": "http://m:80/neuron/simple", "pytorch": "http://m:80/pytorch/simple",
            "public": "http://m:80/pypi-remote/simple"}
    odd = _item("torch-neuronx", "2.14.3.0.1", "http://m/blobs/ab/tn.whl")
    (why,) = provenance.problems([odd], _plan(urls), M)
    assert "several indexes" in why and "neuron (http://m:80/neuron/simple)" in why
    assert "NEURON_ENV_NEURON_FILES_URL" in why
    # the way out: say where the neuron index's files live
    p = _plan(urls, {"NEURON_ENV_NEURON_FILES_URL": "http://m/blobs/"})
    assert provenance.problems([odd], p, M) == []
    assert provenance.origin_of(odd, p, M)[0] == "neuron"


def test_a_mirror_alone_on_its_host_may_serve_files_from_another_path():
    urls = {"neuron": "https://ci:t@art.example/api/pypi/neuron/simple",
            "pytorch": "https://download.pytorch.org/whl/cpu",
            "public": "https://pypi.org/simple"}
    it = _item("nki", "0.3.0", "https://art.example/blobs/nki.whl")
    assert provenance.problems([it], _plan(urls), M) == []


def test_pip_conf_extra_index_on_the_neuron_host_is_known(tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nextra-index-url = http://m/pypi-remote/simple\n")
    env = {"PIP_CONFIG_FILE": str(conf), "HOME": str(tmp_path)}
    assert "http://m/pypi-remote/simple" in mirrors.public_indexes(env)
    assert mirrors.public_indexes({"PIP_CONFIG_FILE": "/dev/null"}) == (mirrors.PYPI,)


def test_credentials_go_to_the_environment_never_the_command_line():
    src = mirrors.index_env("https://u:p%40ss@m/neuron/simple", [], {})
    assert src == {"PIP_INDEX_URL": "https://u:p%40ss@m/neuron/simple",
                   "PIP_EXTRA_INDEX_URL": ""}
    from neuron_env.install import installers

    s = installers.sources("https://u:pw@m/simple", ["https://u:pw@m/x/simple"], ("/wh",),
                           False)
    argv = installers.resolve_cmd(installers.Installer("pip", ("pip",)), "r.json", ["nki"], s,
                                  False)
    assert not any("pw" in a for a in argv) and "pw@" in s.env["PIP_EXTRA_INDEX_URL"]
