"""Checks as data: one registered record per check (checks/registry.py), from which results,
`doctor --list-checks` (text and JSON), the docs table and the schemas' id rules derive."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from neuron_env import checks
from neuron_env.checks import registry
from neuron_env.commands import list_checks
from neuron_env.report.model import CATEGORIES
from tests.helpers import schema_ids

REPO = Path(__file__).resolve().parents[2]
IDS = [c.id for c in checks.registered()]


def test_list_checks_ids_are_unique_and_the_registry_s():
    """instance.aws was listed twice (the registry, and a table of its own in list_checks.py,
    under another category); every row now comes from one record."""
    rows = list_checks.rows(None)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert ids == IDS
    by_id = {c.id: c for c in checks.registered()}
    for r in rows:
        c = by_id[r["id"]]
        assert (r["category"], r["opt_in"], r["about"]) == (c.category, c.opt_in, c.about)


def test_list_checks_text_lists_each_check_once():
    text = list_checks.text({"checks": list_checks.rows(None)})
    firsts = [line.split()[0] for line in text.splitlines() if not line.startswith(" ")]
    assert firsts == IDS


def test_the_opt_in_checks_are_registered_records():
    opt_in = {c.id: (c.category, c.flag) for c in checks.registered() if c.opt_in}
    assert opt_in == {"instance.aws": ("aws", "--aws"), "smoke.device": ("smoke", "--smoke"),
                      "collectives.all_reduce": ("collectives", "--smoke --collectives")}
    assert not set(opt_in) & set(checks.all_ids())  # run only when asked
    assert checks.select([], [], ["smoke.device"])[-1] == "smoke.device"


def test_every_record_is_complete():
    for c in checks.registered():
        assert c.title and not c.title.endswith("."), c.id
        assert c.category in CATEGORIES, c.id
        assert c.id.split(".")[0] in (c.category, "instance"), c.id  # instance.aws: aws


def test_the_schemas_id_rules_accept_exactly_the_registry_s_ids():
    """The doctor and list-checks schemas validate ids by a pattern, never an enum (a report of a
    newer neuron-env with a new check still validates); every registered id matches it, and the
    rule's `examples` list is the registry's ids, derived (tests/helpers/schema_ids.py)."""
    for name in schema_ids.ID_RULES:
        doc = json.loads(schema_ids.schema_path(name).read_text(encoding="utf-8"))
        node = schema_ids.id_rule(doc, name)
        assert "enum" not in node
        assert all(re.fullmatch(node["pattern"], i) for i in IDS), name
        assert node.get("examples") == IDS, (
            f"{name}.schema.json lists other check ids than the registry: run "
            "`python -m tests.helpers.schema_ids` to derive them again")


def test_the_docs_table_lists_exactly_the_registered_checks():
    text = (REPO / "docs" / "doctor.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z]+\.[a-z_.]+)` \|", text, re.M)
    assert sorted(set(listed)) == sorted(IDS)


def test_a_check_s_title_is_its_docstring_s_first_line(monkeypatch):
    """The pattern other branches use (`@check(id, category)` + a docstring, `verdict(...)`)
    registers as it did; `title=` overrides; one id twice is refused."""
    monkeypatch.setattr(registry, "REGISTRY", [])
    monkeypatch.setattr(registry, "BY_ID", {})

    @registry.check("os.example", "os")
    def example(facts, m, ctx):
        """the example holds.

        More words."""
        return registry.verdict("pass", "fine")

    @registry.check("os.other", "os", title="said here")
    def other(facts, m, ctx):
        return registry.result("os.other", "pass", "fine")

    assert [(c.id, c.title, c.fn) for c in registry.REGISTRY] == [
        ("os.example", "the example holds", example), ("os.other", "said here", other)]
    assert (other(None, None, None).id, other(None, None, None).category) == ("os.other", "os")
    with pytest.raises(ValueError, match="registered twice"):
        registry.check("os.example", "os")(example)


@pytest.mark.parametrize("which", ["healthy", "bare"])
def test_every_result_carries_its_record_s_id_and_category(which):
    """Results derive from the record: a check that returns another id, or types a category of
    its own (a literal Result), fails here."""
    from neuron_env.matrix import catalog
    from tests.helpers.facts import host

    facts = host() if which == "healthy" else host(instance=None, devices=0, module=None,
                                                     apt={}, dpkg=False, arch=None)
    by_id = {c.id: c for c in checks.registered()}
    ids = [c.id for c in checks.registered() if c.fn]
    results = checks.run_checks(facts, catalog.select("2.33"), checks.Context(), ids)
    assert [r.id for r in results] == ids
    assert all(r.category == by_id[r.id].category for r in results)
