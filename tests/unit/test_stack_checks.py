"""backend.stack (the release's own Python packages), backend.torch_neuron (an Inf1 torch-neuron
environment is another product), per-family apt rows, and the instance catalogue's facts on
imported releases (EFA, LNC)."""

from __future__ import annotations

import copy

import pytest

from neuron_env import checks
from neuron_env.errors import MatrixError
from neuron_env.matrix import catalog
from neuron_env.matrix.importer import convert
from neuron_env.matrix.loader import parse_text
from neuron_env.matrix.serialize import to_toml
from neuron_env.probes.efa import EfaFacts
from neuron_env.probes.host import DeviceInfo, DriverFacts
from neuron_env.util.record import replace
from tests.helpers.facts import host, target

CTX = checks.Context(python_flag="/venv/bin/python")
M220 = catalog.select("2.20.0")
M231 = catalog.select("2.31.1")

# Neuron 2.20.0's own stack for torch-neuronx 2.1 (AWS's manifest)
GOOD_220 = {"torch": "2.1.2", "torch-neuronx": "2.1.2.2.3.0", "torch-xla": "2.1.4",
            "libneuronxla": "2.0.4115.0", "neuronx-cc": "2.15.128.0",
            "neuronx-distributed": "0.9.0", "transformers-neuronx": "0.12.313"}


def run(pkgs: dict, m=M220, instance="trn1.32xlarge", ids=("backend.stack",), ctx=CTX, **kw):
    facts = host(instance=instance, tgt=target(pkgs, "3.10.12"), **kw)
    return {r.id: r for r in checks.run_checks(facts, m, ctx, list(ids))}


def test_the_release_stack_passes():
    r = run(GOOD_220)["backend.stack"]
    assert r.status == "pass" and r.observed["libneuronxla"] == "2.0.4115.0"


def test_the_next_release_libneuronxla_fails_with_the_pinned_line():
    """A loose dependency pulled the next release's libneuronxla: 'Unknown flags in XLA_FLAGS'."""
    r = run({**GOOD_220, "libneuronxla": "2.0.4986.0"})["backend.stack"]
    assert r.status == "fail" and "Unknown flags in XLA_FLAGS" in r.summary
    assert "not from Neuron 2.20.0" in r.summary
    assert r.fix_command == ("/venv/bin/python -m pip install libneuronxla==2.0.4115.0 "
                             "--extra-index-url https://pip.repos.neuron.amazonaws.com")


def test_torch_neuronx_2_without_libneuronxla_fails():
    pkgs = {k: v for k, v in GOOD_220.items() if k != "libneuronxla"}
    r = run(pkgs)["backend.stack"]
    assert r.status == "fail" and r.summary.startswith("libneuronxla is not installed")
    assert "libneuronxla==2.0.4115.0" in r.fix_command


def test_the_torch_1_13_build_of_libneuronxla_beside_torch_2_1_fails():
    r = run({**GOOD_220, "libneuronxla": "0.5.2978"})["backend.stack"]
    assert r.status == "fail" and "build for torch 1.13, not for torch 2.1" in r.summary


def test_a_library_of_another_release_warns():
    r = run({**GOOD_220, "neuronx-distributed": "0.10.1"})["backend.stack"]
    assert r.status == "warn"
    assert "neuronx-distributed 0.10.1 is not from Neuron 2.20.0" in r.summary
    assert "neuronx-distributed==0.9.0" in r.fix_command


def test_a_family_only_row_is_not_judged_on_another_family():
    """neuronx-distributed-training is listed for trn1 only in 2.20.0."""
    pkgs = {**GOOD_220, "neuronx-distributed-training": "0.1"}
    assert run(pkgs, instance="inf2.48xlarge")["backend.stack"].status == "pass"
    assert run(pkgs)["backend.stack"].status == "warn"


def test_a_native_matrix_has_no_stack_to_compare():
    r = run(GOOD_220, m=catalog.select("2.33"))["backend.stack"]
    assert r.status == "skip" and "lists no Python stack" in r.summary


# -- Inf1: not neuron-env's subject -------------------------------------------------------------
INF1 = {"torch": "1.13.1", "torch-neuron": "1.13.1.2.11.13.0", "neuron-cc": "1.24.0.0"}


def test_an_inf1_environment_is_named_and_points_to_the_inf1_guide():
    res = run(INF1, m=M231, instance="inf1.6xlarge",
              ids=("backend.torch_neuron", "backend.torch", "backend.pairing"))
    r = res["backend.torch_neuron"]
    assert r.status == "fail" and "Inf1 (torch-neuron) environment" in r.summary
    assert "legacy-inf1/pytorch.html" in r.fix and r.fix_command is None
    for other in ("backend.torch", "backend.pairing"):  # no install of torch-neuronx
        assert res[other].fix_command is None and "neuron-env install" not in res[other].fix
        assert "Inf1" in res[other].fix


def test_inf1_packages_beside_torch_neuronx_warn_with_the_uninstall_line():
    res = run({**GOOD_220, "torch-neuron": "1.13.1.2.9.6.0"}, ids=("backend.torch_neuron",))
    r = res["backend.torch_neuron"]
    assert r.status == "warn"
    assert r.fix_command == "/venv/bin/python -m pip uninstall -y torch-neuron"


def test_the_inf1_family_reason_points_to_the_inf1_guide():
    assert "torch-neuron" in M231.family("inf1").reason
    assert "legacy-inf1" in M231.family("inf1").reason


# -- per-family apt rows ------------------------------------------------------------------------
def _manifest(rows: list[dict]) -> dict:
    base = {"name": "torch-neuronx", "version": "2.1.2.2.3.0", "supported_instances":
            ["trn1", "inf2", "trn2"], "supported_python_versions": ["3.10"]}
    return {"manifest_version": "t", "manifest_date": "d", "os_properties": [{"os": "ubuntu22"}],
            "neuron_releases": [
        {"neuron_version": "2.99.0", "packages": [base, *rows]}]}


def test_inf1_rows_never_set_a_version():
    rows = [{"name": "aws-neuronx-runtime-lib", "version": "2.12.23.0",
             "supported_instances": ["inf1"]},
            {"name": "aws-neuronx-runtime-lib", "version": "2.22.14.0",
             "supported_instances": ["trn1", "inf2"]}]
    m = convert(_manifest(rows)).matrices[0]
    assert [(a.name, a.version, a.families) for a in m.driver.apt] == [
        ("aws-neuronx-runtime-lib", "2.22.14.0", ())]


def test_covered_families_with_different_versions_keep_one_row_each():
    rows = [{"name": "aws-neuronx-runtime-lib", "version": "2.22.14.0",
             "supported_instances": ["trn1", "inf2"]},
            {"name": "aws-neuronx-runtime-lib", "version": "2.23.1.0",
             "supported_instances": ["trn2"]}]
    m = parse_text(to_toml(convert(_manifest(rows)).matrices[0]))  # and it round-trips
    assert [(a.version, a.families) for a in m.driver.apt] == [
        ("2.22.14.0", ("trn1", "trn1n", "inf2")), ("2.23.1.0", ("trn2", "trn2u"))]
    assert m.for_family("trn2").apt("aws-neuronx-runtime-lib").version == "2.23.1.0"
    assert m.for_family("inf2").apt("aws-neuronx-runtime-lib").version == "2.22.14.0"
    facts = host(instance="trn2.48xlarge", apt={"aws-neuronx-runtime-lib": "2.23.1.0"})
    r = checks.run_checks(facts, m, CTX, ["driver.versions"])[0]
    assert r.status == "pass", r.summary


def test_a_repeated_apt_package_needs_families():
    text = to_toml(M220).replace('name = "aws-neuronx-tools"\nversion = "2.19.0.0"',
                                 'name = "aws-neuronx-tools"\nversion = "2.19.0.0"\n\n'
                                 '[[driver.apt]]\nname = "aws-neuronx-tools"\nversion = "2.1"')
    with pytest.raises(MatrixError, match="listed more than once"):
        parse_text(text)


def test_stack_rows_round_trip_and_tie_to_their_torch():
    rows = {(r.name, r.version, r.torch) for r in M220.stack}
    assert ("torch-xla", "1.13.1+torchneurong", "1.13") in rows
    assert ("libneuronxla", "0.5.2978", "1.13") in rows and ("torch-xla", "2.1.4", "2.1") in rows
    assert parse_text(to_toml(M220)).stack == M220.stack
    data = copy.deepcopy(_manifest([{"name": "torch-xla", "version": "2.12.0",
                                     "supported_instances": ["trn1"]}]))
    assert not convert(data).matrices[0].stack  # no pair has torch 2.12: another stack's


# -- the instance catalogue on every release -----------------------------------------------------
@pytest.mark.parametrize("release", ["2.10.0", "2.20.0", "2.31.1"])
def test_imported_releases_expect_efa_on_trn1_32xlarge(release):
    m = catalog.select(release)
    ctx = replace(CTX, expect_efa=True)
    r = checks.run_checks(host(instance="trn1.32xlarge", efa=EfaFacts()), m, ctx, ["net.efa"])[0]
    assert r.status == "fail" and "--expect-efa" in r.summary
    t = m.instance_type("trn2.48xlarge")[1]
    assert (t.lnc_default, t.efa, t.source) == (2, True, "trn2-arch")


def test_a_matrix_without_the_default_lnc_says_so_not_that_files_were_unreadable():
    m = catalog.select("2.31.1")
    typ = m.instance_type("trn2.48xlarge")[1]
    bare = replace(m, instances=tuple(
        replace(f, types=(replace(typ, lnc_default=None),)) if f.family == "trn2" else f
        for f in m.instances))
    nodes = tuple(f"neuron{i}" for i in range(16))
    facts = host(instance="trn2.48xlarge")
    facts = replace(facts, driver=DriverFacts("2.29.0.0", nodes, tuple(
        DeviceInfo(n, 8) for n in nodes), {}, True, True))
    r = checks.run_checks(facts, bare, CTX, ["driver.cores"])[0]
    assert "the matrix gives no default LNC for trn2.48xlarge" in r.summary
    assert "not readable" not in r.summary


# -- numpy: the range the installed compiled Neuron packages declare ------------------------------
def _numpy(numpy: str | None, req=("numpy (<=1.25.2,>=1.24.3)",)):
    from neuron_env.probes.interpreter import Dist

    facts = host(instance="trn1.32xlarge", tgt=target(GOOD_220, "3.10.12"))
    t = facts.target
    dists = {**t.dists, "neuronx-cc": replace(t.dist("neuronx-cc"), requires_pinned=req)}
    if numpy:
        dists["numpy"] = Dist("numpy", numpy)
    facts = replace(facts, target=replace(t, dists=dists))
    return checks.run_checks(facts, M220, CTX, ["backend.pins"])[0]


def test_numpy_2_beside_a_compiler_built_for_numpy_1_fails_with_the_declared_range():
    r = _numpy("2.0.1")
    assert r.status == "fail" and "compiled against API version" in r.summary
    assert "neuronx-cc 2.15.128.0's declared range >=1.24.3,<=1.25.2" in r.summary
    assert r.fix_command == "/venv/bin/python -m pip install 'numpy>=1.24.3,<=1.25.2'"


def test_optimum_outside_optimum_neuron_range_fails():
    from neuron_env.probes.interpreter import Dist

    facts = host(instance="inf2.48xlarge", tgt=target(GOOD_220, "3.10.12"))
    t = facts.target
    on = Dist("optimum-neuron", "0.0.24", requires_pinned=("optimum~=1.22.0",
                                                           "numpy<=1.25.2; extra == 'x'"))
    dists = {**t.dists, "optimum-neuron": on, "optimum": Dist("optimum", "1.23.3")}
    r = checks.run_checks(replace(facts, target=replace(t, dists=dists)), M220, CTX,
                          ["backend.pins"])[0]
    assert r.status == "fail" and "optimum 1.23.3 is outside optimum-neuron 0.0.24" in r.summary
    assert r.fix_command == "/venv/bin/python -m pip install 'optimum~=1.22.0'"


def test_numpy_inside_the_range_passes_and_markers_are_left_out():
    assert _numpy("1.25.2").status == "pass"
    assert _numpy("2.0.1", ('numpy<2; extra == "x"',)).status == "skip"
    assert _numpy(None).status == "fail"


def test_the_probe_keeps_numpy_and_optimum_requirements_only():
    from neuron_env.inside import probe

    keep = ["numpy (<=1.25.2,>=1.24.3)", "numpy", "optimum~=1.22.0", "numpy<2; extra == 'x'"]
    drop = ["optimum-neuron==0.0.24", "numpyro>=0.1", "scipy", "torch==2.1.*"]
    assert [r for r in keep + drop if probe._pinned(r)] == keep


def test_matrix_show_lists_the_python_stack():
    from neuron_env.commands.matrix import show_text

    text = show_text(catalog.select("2.21.1"))
    assert "aws-neuronx-runtime-lib 2.23.112.0" in text
    assert "libneuronxla 2.1.714.0 (torch 2.1, 2.5)" in text
    assert "torch-xla 2.1.6 (torch 2.1)" in text


def test_the_summary_leads_with_the_failure():
    r = run({**GOOD_220, "neuronx-cc": "2.14.227.0", "torch-xla": "2.1.3"})["backend.stack"]
    assert r.status == "fail" and r.summary.startswith("torch-xla 2.1.3")
    assert "(+1 more)" in r.summary


def test_a_placeholder_neuron_cc_in_an_inf1_environment_is_no_torch_neuronx_install():
    """aws-neuron-sdk#602: Python 3.9 made pip take neuron-cc's 1.0.post1 placeholder beside
    torch-neuron; backend.origin used to answer `pip uninstall torch-neuron neuron-cc &&
    neuron-env install` (torch-neuronx on an Inf1 environment)."""
    inf1 = {"torch": "1.11.0", "torch-neuron": "1.11.0.2.3.0.0", "neuron-cc": "1.0.post1"}
    r = run(inf1, m=catalog.select("2.4.0"), instance="inf1.xlarge",
            ids=("backend.origin",))["backend.origin"]
    assert r.status == "fail" and "PLACEHOLDER" in r.summary
    assert r.fix_command is None and "neuron-env install" not in (r.fix or "")
    assert "legacy-inf1/pytorch.html" in (r.fix or "")
