"""Issue #36, "every numeric option validated" (finding 2): the typer app is walked; every int or
float option carries a callback made by cli/app.number() (finite, in range), and each refuses
nan, inf and -1 with exit 2 while parsing, before anything runs (in-process, no target)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from neuron_env.cli import app
from neuron_env.errors import EXIT_CONFIG
from tests.unit.test_one_writer import REQUIRED, _flag, walk

NUMERIC = ("int", "float", "int range", "float range", "integer", "integer range")


def numeric_options() -> list[tuple[str, str]]:
    return sorted({(cmd, _flag(p)) for cmd, p in walk()
                   if getattr(p.type, "name", "") in NUMERIC})


def test_every_numeric_option_is_checked_by_the_one_number_callback():
    found = numeric_options()
    assert ("trial", "--price-per-hour") in found and ("trial", "--rtol") in found
    unchecked = [(cmd, _flag(p)) for cmd, p in walk()
                 if getattr(p.type, "name", "") in NUMERIC
                 and not getattr(p.callback, "neuron_env_number", False)]
    assert not unchecked, f"numeric options without a cli/app.number() callback: {unchecked}"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
@pytest.mark.parametrize("cmd, flag", numeric_options())
def test_every_numeric_option_refuses_non_finite_and_negative(tmp_path, cmd, flag, value):
    manifest = tmp_path / "m.json"
    manifest.write_text("{}")
    args = [*cmd.split(), *[a.replace("MANIFEST", str(manifest)) for a in REQUIRED.get(cmd, [])],
            f"{flag}={value}"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == EXIT_CONFIG, (args, r.output)
    assert f"'{flag}'" in r.output or f"{flag}" in r.output, r.output  # refused for THIS flag


def test_a_price_or_tolerance_that_is_fine_passes_the_callback():
    from neuron_env.cli.app import price, seconds, tolerance

    assert price(1.34) == 1.34 and tolerance(0.0) == 0.0 and seconds(300.0) == 300.0
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(Exception, match="finite"):
            price(bad)
