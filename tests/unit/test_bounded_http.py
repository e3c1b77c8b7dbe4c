"""guards/bounded_http.py, its pure parts: URL checks (exit 2, masked), "the same host", and the
JSON depth limit checked before parsing."""

from __future__ import annotations

import json

import pytest

from neuron_env.errors import ConfigurationError
from neuron_env.guards.bounded_http import check_url, origin


@pytest.mark.parametrize("url", ["http://u:pw@h:abc/x", "https://u:pw@h/a b", "http://u:pw@[::1/x",
                                 "https://u:pw@[zz::1]/x", "https://u:pw@h:70000/x",
                                 "https://u:pw@h/x\n", "https:///x", "gopher://h/x"])
def test_bad_urls_are_configuration_errors_with_credentials_masked(url: str) -> None:
    with pytest.raises(ConfigurationError) as e:
        check_url(url)
    assert "not a valid URL" in e.value.message and "pw" not in e.value.message


def test_good_urls_pass() -> None:
    for url in ("https://h/x.json", "http://127.0.0.1:8080/a", "https://[::1]:443/x",
                "s3://bucket/key", "file:///srv/m/index.json"):
        assert check_url(url).scheme in ("https", "http", "s3", "file")


def test_origin_is_scheme_host_and_port() -> None:
    assert origin("https://H.example:443/a") == origin("https://h.example/b")
    assert origin("http://h/a") != origin("https://h/a")
    assert origin("https://h:8443/a") != origin("https://h/a")
    assert origin("s3://bucket/a") == origin("s3://bucket/b/c") != origin("s3://other/a")


def test_json_depth() -> None:
    """The manifest goes through the one reader's parser: a deep one is exit 2, no recursion."""
    from neuron_env.errors import BadInput
    from neuron_env.guards.files import parse_json

    assert parse_json(json.dumps({"a": [[1]], "s": "[[[[[[[[[[[[[["}), "m", depth=3)
    with pytest.raises(BadInput):
        parse_json("[" * 5 + "]" * 5, "m", depth=4)
    with pytest.raises(BadInput):
        parse_json("[" * 100000, "m")
