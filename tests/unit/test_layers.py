"""Every import arrow points down: the layer order (LAYERS in tests/helpers/imports.py, the one
declaration; docs/architecture.md draws it) holds for every module arrow of neuron_env/ and the
emulator, module-level, deferred and TYPE_CHECKING imports alike, and no circle is left."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import imports as graph

REPO = Path(__file__).resolve().parents[2]


def test_every_unit_has_one_layer():
    units = {graph.unit(m) for m in graph.sources()}
    placed = [u for row in graph.LAYERS for u in row]
    assert len(placed) == len(set(placed)), "a unit in two rows"
    # a new package (or top module) needs a row in LAYERS (tests/helpers/imports.py) and in
    # docs/architecture.md; a removed one loses its row
    assert sorted(units) == sorted(placed)


def test_no_import_points_up_or_sideways():
    assert graph.upward(graph.import_arrows()) == []


def test_no_circle_anywhere():
    assert graph.import_circles(graph.import_arrows()) == []


def test_the_rule_catches_an_upward_arrow():
    """The detector itself: the four upward imports this rule removed would each be caught."""
    up = graph.upward({"neuron_env.report.text": {"neuron_env.checks.fixes"},
                       "neuron_env.probes.facts": {"neuron_env.aws.facts"},
                       "neuron_env.install.noop": {"neuron_env.checks"},
                       "neuron_env.trial.dist_command": {"neuron_env.commands"},
                       "neuron_env.checks": {"neuron_env.report.model"}})
    assert [u.split(" ")[0] for u in up] == ["neuron_env.install.noop",
                                             "neuron_env.probes.facts",
                                             "neuron_env.report.text",
                                             "neuron_env.trial.dist_command"]
    # sideways (another unit of the same row) is refused too
    assert graph.upward({"neuron_env.scan.x": {"neuron_env.smoke.y"}}) != []


def test_the_drawing_in_the_architecture_page_is_the_declared_order():
    """docs/architecture.md's layer list (top first, one line per row) equals LAYERS."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("<!-- layers -->")[1].split("<!-- /layers -->")[0]
    rows = [tuple(re.findall(r"`([\w.]+)/?`", line.split("|")[2]))
            for line in block.splitlines() if line.startswith("| ") and "`" in line]
    assert tuple(reversed(rows)) == graph.LAYERS
