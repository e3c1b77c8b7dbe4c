"""Credentials in URLs are masked wherever neuron-env writes text."""

from __future__ import annotations

import pytest

from neuron_env.guards import redact


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


@pytest.mark.parametrize("password", ["p@ssW0rd", "it's", 'say"hi', "a:b:c", "p%40ss%3A%27",
                                      "@@", "x'@\"y"])
def test_passwords_with_at_quotes_colons_and_percent_are_masked_whole(password):
    for raw in (f"https://ci:{password}@mirror.example/simple",
                f"--index-url http://ci:{password}@10.0.0.1:8080/pypi/simple x"):
        out = redact.text(raw)
        assert "ci:" not in out and password not in out and "***@" in out, out
        assert out.endswith(("mirror.example/simple", "/pypi/simple x"))


def test_json_documents_keep_their_shape():
    import json

    doc = {"a": "https://h", "b": "a@b", "c": "https://u:p\"@q@h/x", "d": "https://u:p\",x@h/"}
    for text in (json.dumps(doc), json.dumps(doc, separators=(",", ":")),
                 json.dumps(doc, indent=2)):
        back = json.loads(redact.text(text))
        assert back["a"] == "https://h" and back["b"] == "a@b"
        assert back["c"] == "https://***@h/x" and back["d"] == "https://***@h/"
