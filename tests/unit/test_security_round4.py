"""Issue #45 (security round 4): the pure parts of the findings, in-process. The parts that run
other processes (the inside scripts, the emulator, printed launch lines, pasted fix lines) are
in tests/integration/test_security_round4.py and backend/tests/."""

from __future__ import annotations

import json
import math

import pytest

from neuron_env.errors import AwsError


# -- finding 10: one numeric conversion for untrusted numbers -----------------------------------
def _product(usd: object) -> str:
    return json.dumps({"terms": {"OnDemand": {"t": {"priceDimensions": {"d": {
        "unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}}})


@pytest.mark.parametrize("usd", [10 ** 400, -(10 ** 400), "9" * 400, "1e400"])
def test_a_400_digit_price_is_a_soft_aws_error_not_exit_3(usd):
    from neuron_env.aws.pricing import hourly_usd

    with pytest.raises(AwsError) as e:
        hourly_usd([_product(usd)])
    assert e.value.code == "bad-answer" and "finite" in e.value.message


def test_the_one_conversion_never_raises():
    from neuron_env.util.files import number

    assert number(10 ** 400) == math.inf and number(-(10 ** 400)) == -math.inf
    assert number("2.5") == 2.5 and number(3) == 3.0
    for bad in (True, None, "cheap", [], {}):
        assert math.isnan(number(bad))


# -- finding 12: one release grammar for loader, import, update and the catalog ------------------
@pytest.mark.parametrize("release", ["2.99\n", " 2.99", "1!2.99", "v2.99", "2.99 "])
def test_a_release_the_catalog_cannot_read_back_is_refused_by_the_loader(release):
    from pathlib import Path

    from neuron_env.errors import MatrixError
    from neuron_env.matrix.loader import parse_text

    repo = Path(__file__).resolve().parents[2]
    text = (repo / "matrices" / "neuron-2.33.toml").read_text()
    bad = text.replace('release = "2.33"', f"release = {json.dumps(release)}", 1)
    assert bad != text
    with pytest.raises(MatrixError, match="release"):
        parse_text(bad, "hostile.toml")
    parse_text(text, "good.toml")  # the file itself still loads


def test_the_release_grammar_is_the_catalogs_file_name_pattern():
    from neuron_env.matrix import catalog
    from neuron_env.matrix.model import release_ok

    for name in ("2.33", "2.31.1", "2.33rc1"):
        assert release_ok(name) and catalog._FILE.fullmatch(f"neuron-{name}.toml")
    for name in ("2.99\n", " 2.99", "1!2.99", "v2.99", ""):
        assert not release_ok(name) and not catalog._FILE.fullmatch(f"neuron-{name}.toml")
