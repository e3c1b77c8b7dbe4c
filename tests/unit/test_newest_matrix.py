"""Neuron 2.34 (issue #35): the default matrix, doctor judging a 2.34 environment and a 2.33
build against it (the backend family read from the matrices' rows, never from a version's
shape), and TorchAO Neuron as a Neuron-built companion."""

from __future__ import annotations

import pytest

from neuron_env import checks
from neuron_env.commands.doctor import neuronx_releases
from neuron_env.install.plan import Inputs, make_plan
from neuron_env.matrix import catalog
from neuron_env.probes.companions import CompanionImports
from neuron_env.util.record import replace
from tests.helpers.facts import GOOD, host, target

M = catalog.select("2.34")
M233 = catalog.select("2.33")
CTX = checks.Context(python_flag="/venv/bin/python")
GOOD_234 = {**GOOD, "torch-neuronx": "2.14.3.1.1802"}
TAO = "0.18.0+neuron.1"
NEURON_INDEX = "https://pip.repos.neuron.amazonaws.com"


def one(id_, facts, m=M, ctx=CTX):
    """As doctor runs it: with the known releases that pair an unpaired torch-neuronx."""
    ctx = replace(ctx, neuronx_releases=neuronx_releases(facts, m))
    return checks.run_checks(facts, m, ctx, [id_])[0]


# -- the matrix ------------------------------------------------------------------------------
def test_234_is_the_default_and_pairs_the_31_families():
    assert catalog.select().release == "2.34"
    assert catalog.available()[0].release == "2.34"
    assert M.backend == "native" and str(M.date) == "2026-11-30"
    assert [p.neuronx_requirement for p in M.pairs_newest_first()] == [
        "torch-neuronx==2.14.3.1.*", "torch-neuronx==2.13.3.1.*"]
    assert M.python.contains("3.14.0") and not M.python.contains("3.11.9")


def test_234_facts_are_sourced_or_marked():
    ids = {s.id for s in M.sources}
    assert {"gh-release-2.34", "release-notes-2.34", "torchao-neuron-notes"} <= ids
    assert "github.com/aws-neuron/torch-neuronx/releases/tag/v2.34.0" in \
        M.source_by_id("gh-release-2.34").url
    for a in M.driver.apt:  # no page read states 2.34's component versions: none is guessed
        assert a.version is None and not a.confirmed and a.source in ids
    assert all(o.source in ids for o in M.os)
    assert "torchao" not in {lim.id for lim in M.limitations}  # 2.33's "no TorchAO" is gone
    assert "neuron-ls-json" in {lim.id for lim in M.limitations}
    tao = M.torch_companion("torchao-neuron", "2.14")
    assert tao.source == "torchao-neuron-notes" and tao.conflicts == ("torchao",)
    assert tao.families == ("trn3", "trn3p", "trn3e") and tao.provides == "torchao"
    assert tao.spec.contains(TAO) and tao.torch_neuronx.contains("2.14.3.1")
    assert not tao.torch_neuronx.contains("2.14.3.0.1711")
    assert M.index_for("torchao-neuron").name == "neuron"


# -- backend.pairing / backend.lineage: the family from the rows ----------------------------
def test_a_correct_234_environment_passes():
    for id_ in ("backend.torch", "backend.pairing", "backend.lineage", "backend.tools"):
        r = one(id_, host(tgt=target(GOOD_234)))
        assert r.status == "pass", (id_, r.summary)


def test_a_full_234_wheel_version_is_native_not_xla():
    """2.14.3.1.1802 has the shape the old version pattern read as <torch>.<neuron> (XLA)."""
    facts = host(tgt=target(GOOD_234))
    r = one("backend.lineage", facts, m=M233)  # 2.33 does not pair it: the rows decide
    assert r.status == "pass" and "native" in r.summary, r.summary
    r = one("backend.pairing", facts, m=M233)
    assert "XLA" not in r.summary and "Neuron 2.34's build" in r.summary, r.summary


def test_a_233_build_against_234_warns_with_the_upgrade_line():
    facts = host(tgt=target(GOOD))  # torch 2.14.0 + torch-neuronx 2.14.3.0.1711 (2.33)
    r = one("backend.pairing", facts)
    assert r.status == "warn", r.summary
    assert "Neuron 2.33's build" in r.summary and "==2.14.3.1.*" in r.summary
    assert r.fix_command == "neuron-env install --python /venv/bin/python --torch 2.14"
    assert "--matrix 2.33" in r.fix and r.details["built_by"] == "2.33"
    assert one("backend.lineage", facts).status == "pass"
    assert one("backend.pairing", facts, m=M233).status == "pass"  # --matrix 2.33


def test_a_233_build_with_the_wrong_torch_still_fails():
    r = one("backend.pairing", host(tgt=target({**GOOD, "torch": "2.13.0"})))
    assert r.status == "fail" and "needs torch 2.14.0, found torch 2.13.0" in r.summary


def test_the_xla_build_against_234_fails_naming_its_release():
    r = one("backend.pairing", host(tgt=target({"torch": "2.9.0",
                                                 "torch-neuronx": "2.9.0.2.15.32035"})))
    assert r.status == "fail" and "XLA-based torch-neuronx of Neuron 2.31" in r.summary


def test_a_version_no_matrix_pairs_fails_and_says_so():
    r = one("backend.pairing", host(tgt=target({**GOOD, "torch-neuronx": "2.14.9.0"})))
    assert r.status == "fail" and "no known matrix pairs it" in r.summary


def test_no_lookup_when_the_matrix_pairs_the_version():
    assert neuronx_releases(host(tgt=target(GOOD_234)), M) is None
    found = neuronx_releases(host(tgt=target(GOOD)), M)
    assert [(k.release, k.backend) for k in found] == [("2.33", "native")]


# -- TorchAO Neuron --------------------------------------------------------------------------
def tao_facts(packages, instance="trn3.48xlarge", imports=None):
    return replace(host(instance=instance, tgt=target(packages)), companions=imports)


def test_torchao_neuron_on_trn3_with_234_passes():
    imports = CompanionImports(torch_version="2.14.0+cpu", modules={"torchao": None},
                               seconds=1.2)
    r = one("backend.companions", tao_facts({**GOOD_234, "torchao-neuron": TAO},
                                            imports=imports))
    assert r.status == "pass", r.summary
    assert r.expected["torchao-neuron"] == "torchao-neuron==0.18.0"


def test_upstream_torchao_beside_torchao_neuron_fails_with_the_repair():
    r = one("backend.companions", tao_facts({**GOOD_234, "torchao-neuron": TAO,
                                             "torchao": "0.19.0"}))
    assert r.status == "fail" and "both installed" in r.summary, r.summary
    assert r.fix_command == (
        "/venv/bin/python -m pip uninstall -y torchao && /venv/bin/python -m pip install "
        f"--force-reinstall --no-deps torchao-neuron==0.18.0 --index-url {NEURON_INDEX}")


def test_torchao_neuron_on_trn2_warns():
    r = one("backend.companions", tao_facts({**GOOD_234, "torchao-neuron": TAO},
                                            instance="trn2.48xlarge"))
    assert r.status == "warn" and "trn3, trn3p, trn3e instances only" in r.summary


def test_torchao_neuron_with_an_older_torch_neuronx_warns():
    r = one("backend.companions", tao_facts({**GOOD, "torchao-neuron": TAO}))
    assert r.status == "warn" and "needs torch-neuronx>=2.14.3.1" in r.summary, r.summary
    assert "2.14.3.0.1711" in r.summary


def test_torchao_neuron_with_torch_213_warns():
    r = one("backend.companions", tao_facts({"torch": "2.13.0+cpu",
                                             "torch-neuronx": "2.13.3.1.5",
                                             "torchao-neuron": TAO}))
    assert r.status == "warn" and "built for torch 2.14, not torch 2.13" in r.summary


def test_install_with_torchao_neuron_takes_it_from_the_neuron_index():
    plan = make_plan(M, Inputs(python="/venv/bin/python", python_version="3.12.4",
                               prefix="/venv", os_id="ubuntu", os_version="26.04",
                               arch="x86_64", companions=("torchao-neuron",)))
    req = {r.name: r for r in plan.requirements}["torchao-neuron"]
    assert req.spec == "torchao-neuron==0.18.0" and req.index == "neuron"
    assert any("trn3, trn3p, trn3e instances only" in w for w in plan.warnings)


def test_install_with_torchao_neuron_needs_a_234_matrix():
    from neuron_env.errors import ResolutionError

    with pytest.raises(ResolutionError, match="no torchao-neuron pairing"):
        make_plan(M233, Inputs(python="/venv/bin/python", python_version="3.12.4",
                               prefix="/venv", os_id="ubuntu", os_version="26.04",
                               arch="x86_64", companions=("torchao-neuron",)))


# -- neuron-ls: 2.34's --output-format json wraps the devices in an object ------------------
def test_neuron_ls_234_layout_with_top_level_fields_is_read():
    import json

    from neuron_env.guards.proc import Completed
    from neuron_env.probes.neuron_ls import _judge

    devices = [{"neuron_device": i, "nc_count": 8, "logical_neuroncore_config": 2}
               for i in range(2)]
    new = {"instance_type": "trn3.48xlarge", "ultraserver": {"id": "u-1", "nodes": 4},
           "neuron_devices": devices}
    out = Completed(("neuron-ls", "--output-format", "json"), 0, json.dumps(new), "", 0.1)
    f = _judge("/opt/aws/neuron/bin/neuron-ls", "--output-format json", out)
    assert f.error is None and f.devices == tuple(devices)
    old = Completed(("neuron-ls", "-j"), 0, json.dumps(devices), "", 0.1)
    assert _judge("neuron-ls", "-j", old).devices == tuple(devices)
    odd = Completed(("neuron-ls", "-j"), 0, json.dumps({"a": devices, "b": devices}), "", 0.1)
    assert "nor an object holding one" in _judge("neuron-ls", "-j", odd).error


# -- scan: the 2.34 rule set (TorchAO Neuron is no longer "unsupported") --------------------
def test_scan_rules_for_234_point_torchao_at_torchao_neuron(tmp_path):
    from neuron_env.commands import scan as cmd
    from neuron_env.scan import ruleset

    assert ruleset.locate(None).name == "neuron-2.34.toml"  # the newest, as the matrix
    assert ruleset.locate("2.34").name == "neuron-2.34.toml"
    (tmp_path / "a.py").write_text("import torchao\n")
    new = cmd.run([str(tmp_path / "a.py")], matrix="2.34", exit_zero=True).body
    old = cmd.run([str(tmp_path / "a.py")], matrix="2.33", exit_zero=True).body
    (f_new,), (f_old,) = new["findings"], old["findings"]
    assert f_new["rule"] == f_old["rule"] == "beta.torchao"
    assert f_new["severity"] == "warning" and "torchao-neuron" in f_new["message"]
    assert f_old["severity"] == "error"


def test_a_patch_release_without_a_file_is_its_minors_native_matrix():
    """2.33.1 has no matrix of its own (no page read states a change of families): it is
    2.33's; an XLA-era patch that does not exist stays an error."""
    from neuron_env.errors import ConfigurationError

    assert catalog.select("2.33.1").release == "2.33"
    assert catalog.select("2.34.1").release == "2.34"
    assert catalog.select("2.31.1").release == "2.31.1" and catalog.select("2.31").release \
        == "2.31.1"
    with pytest.raises(ConfigurationError, match="no such release"):
        catalog.select("2.31.7")
