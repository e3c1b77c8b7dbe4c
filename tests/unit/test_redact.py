"""Credentials in URLs are masked wherever neuron-env writes text."""

from __future__ import annotations

import pytest

from neuron_env.util import redact


@pytest.mark.parametrize("raw,masked", [
    ("https://user:tok@mirror.example/simple", "https://***@mirror.example/simple"),
    ("--index-url http://aws:eyJ0b2s=@10.0.0.1:8080/pypi x",
     "--index-url http://***@10.0.0.1:8080/pypi x"),
    ("a https://only-token@h/ and https://u:p@h2/", "a https://***@h/ and https://***@h2/"),
    ('"url": "https://u:p%40x@h/"', '"url": "https://***@h/"'),
])
def test_userinfo_is_masked(raw, masked):
    assert redact.text(raw) == masked


@pytest.mark.parametrize("clean", [
    "https://pip.repos.neuron.amazonaws.com", "file:///opt/wheels/x.whl",
    "mail me at ops@example.com", "git+https://github.com/a/b@v1.0",
    "torch @ https://download.pytorch.org/whl/cpu/torch-2.14.0.whl",
])
def test_what_holds_no_credentials_is_left_alone(clean):
    assert redact.text(clean) == clean


def test_values_are_masked_through_dicts_and_lists():
    doc = {"packages": [{"index_url": "https://u:p@m/simple", "n": 1}], "ok": None}
    assert redact.value(doc) == {"packages": [{"index_url": "https://***@m/simple", "n": 1}],
                                 "ok": None}
