"""Pure parts of publishing (the SSM summary) and of `neuron-env instance`."""

from __future__ import annotations

import json

import pytest

from neuron_env.aws.publish import SSM_STANDARD_MAX, check_parameter_name, encode, summary_doc
from neuron_env.commands import instance
from neuron_env.errors import UsageError
from neuron_env.matrix import catalog
from neuron_env.report.model import Report, Result


def _report(results, code=1):
    return Report(schema="neuron-env.doctor/1", tool={"name": "neuron-env", "version": "0"},
                  matrix={"release": "2.33"},
                  target={"instance": {"type": "trn2.48xlarge", "instance_id": "i-0abc12345"}},
                  results=tuple(results), exit_code=code)


def test_summary_lists_failures_first_and_fits_a_standard_parameter():
    many = [Result(f"backend.check_{i}", "backend", "warn", "ü" * 2000) for i in range(60)]
    many.append(Result("os.release", "os", "fail", "Ubuntu 22.04 is not supported"))
    doc = summary_doc(_report(many))
    assert doc["problems"][0]["id"] == "os.release"
    assert len(encode(doc).encode()) <= SSM_STANDARD_MAX
    assert doc["more_problems"] == 61 - len(doc["problems"]) and doc["more_problems"] > 0
    assert doc["status"] == "fail" and doc["summary"]["warn"] == 60


def test_summary_of_a_clean_run():
    doc = summary_doc(_report([Result("os.release", "os", "pass", "ok")], code=0))
    assert doc["status"] == "pass" and doc["problems"] == [] and doc["more_problems"] == 0
    assert json.loads(encode(doc))["instance_id"] == "i-0abc12345"


@pytest.mark.parametrize("code,verdict", [(0, "pass"), (1, "fail"), (2, "error"),
                                          (3, "error"), (4, "timeout")])
def test_summary_verdict_follows_the_exit_code(code, verdict):
    assert summary_doc(_report([], code))["status"] == verdict


def test_instance_facts_of_a_supported_and_an_unsupported_family():
    doc = instance.run("trn2.48xlarge", None, False, None)
    assert doc["matrix_facts"]["devices"] == 16 and doc["family"]["supported"]
    assert doc["warnings"] == []
    doc = instance.run("trn1.32xlarge", "2.33", False, None)
    text = instance.text(doc)
    assert "NOT supported" in text and "--matrix 2.31" in text
    doc = instance.run("m5.large", None, False, None)
    assert doc["family"] is None and "not a Neuron family" in doc["warnings"][0]


@pytest.mark.parametrize("bad", ["bad type!", "trn2", ".48xlarge", ""])
def test_instance_refuses_what_is_not_an_instance_type(bad):
    with pytest.raises(UsageError):
        instance.run(bad or " ", None, False, None)


def test_dlami_parameter_names():
    m = catalog.select(None)
    assert instance.dlami_parameter(m, "ubuntu-24.04").startswith("/aws/service/")
    assert "ubuntu-26.04" in instance.dlami_parameter(m, "ubuntu-26.04")
    with pytest.raises(UsageError):
        instance.dlami_parameter(m, "Ubuntu 24")


@pytest.mark.parametrize("name", ["/ami/neuron-env/doctor", "neuron_env.doctor", "/a/b-c/d_e.f"])
def test_ssm_names_that_aws_accepts(name):
    check_parameter_name(name)


@pytest.mark.parametrize("name", ["has space", "a/b", "/aws/x", "ssm-thing", "/SSM/x",
                                  "/" + "a/" * 16 + "b", "x" * 1012, "", "/a/$b"])
def test_ssm_names_that_aws_refuses_are_usage_errors(name):
    with pytest.raises(UsageError) as e:
        check_parameter_name(name)
    assert e.value.exit_code == 2 and "--publish-ssm" in str(e.value)
