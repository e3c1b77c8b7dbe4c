"""Facts with sources: the 2.33 matrix's references, the imported matrices' manifest source, and
what `instance --dlami` picks."""

from __future__ import annotations

from neuron_env.commands import instance
from neuron_env.commands.matrix import sources_text
from neuron_env.matrix import catalog
from neuron_env.util.record import replace

M = catalog.select("2.33")


def test_every_233_instance_type_and_os_names_a_declared_source():
    ids = {s.id for s in M.sources}
    for f in M.instances:
        for t in f.types:
            assert t.source in ids, t.name
            assert M.sources_for(f"instances.{f.family}"), f.family
    for o in M.os:
        assert o.source in ids, o.label
    assert all(s.url.startswith("https://") for s in M.sources)


def test_trn2_family_types_and_unconfirmed_markers():
    assert {t.name for f in M.instances for t in f.types} >= {
        "trn2.48xlarge", "trn2u.48xlarge", "trn2n.48xlarge", "trn2.3xlarge", "trn3.48xlarge"}
    t = M.instance_type("trn2n.48xlarge")[1]
    assert (t.devices, t.cores_per_device, t.lnc_default, t.efa) == (16, 8, 2, True)
    assert M.instance_type("trn2.48xlarge")[1].confirmed
    assert not M.instance_type("trn3.48xlarge")[1].confirmed
    assert M.instance_type("trn3.48xlarge")[1].devices is None  # never guessed


def test_233_apt_versions_are_recorded_unconfirmed_with_their_source():
    for a in M.driver.apt:
        assert a.version and not a.confirmed and a.source == "components-2.33"


def test_imported_xla_matrix_cites_the_manifest():
    m = catalog.select("2.31.1")
    assert [s.id for s in m.sources] == ["n2-manifest", "trn1-arch", "trn2-arch", "inf2-arch"]
    assert m.sources[0].covers == ("*",)
    # the instance catalogue's facts cite AWS's architecture pages
    assert [s.id for s in m.sources_for("instances.trn1")] == ["n2-manifest", "trn1-arch"]
    assert m.instance_type("trn1.32xlarge")[1].source == "trn1-arch"


def test_sources_text_lists_what_cites_each_source():
    text = sources_text(M)
    assert "[neuron-ls-guide]" in text and "cited by: trn2n.48xlarge" in text
    assert "aws-neuronx-dkms 2.31.7.0 (unconfirmed)" in text


def test_dlami_prefers_single_framework_and_says_why_when_it_cannot():
    param, note = instance.dlami_choice(M, "ubuntu-24.04")
    assert param == "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
    assert "single-framework" in note and "torch-neuronx 2.14.0" in note
    single = "/aws/service/neuron/dlami/example-single/ubuntu-24.04/latest/image_id"
    m = replace(M, dlami=(*M.dlami, ("ssm_single_framework_ubuntu_24_04", single)))
    assert instance.dlami_choice(m, "ubuntu-24.04") == (single, None)
    assert instance.dlami_choice(catalog.select("2.31.1"), "ubuntu-22.04")[1] is None


def test_instance_doc_for_trn2n_has_no_warnings_and_a_source():
    doc = instance.run("trn2n.48xlarge", "2.33", False, None)
    assert doc["family"]["supported"] and doc["warnings"] == []
    assert doc["matrix_facts"]["source"].endswith("neuron-ls.html")
    assert "LNC 2 by default" in instance.text(doc)


def test_os_fix_names_the_dlami_in_words_and_prints_its_image_id():
    from neuron_env.checks import fixes
    from neuron_env.matrix import dlami as dl

    assert dl.label("/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id") \
        == "multi-framework DLAMI on Ubuntu 24.04"
    text, cmd = fixes.dlami(M)
    assert "launch the Neuron multi-framework DLAMI on Ubuntu 24.04" in text, text
    assert cmd == ("aws ssm get-parameter --name /aws/service/neuron/dlami/multi-framework/"
                   "ubuntu-24.04/latest/image_id --query Parameter.Value --output text")
    single = "/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id"
    m = replace(M, dlami=(*M.dlami, ("ssm_single_framework_ubuntu_24_04", single)))
    assert "pytorch-2.9 DLAMI on Ubuntu 24.04" in fixes.dlami(m)[0]
    assert fixes.dlami(replace(M, dlami=()))[1] is None
