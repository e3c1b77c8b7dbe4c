"""The check ids the doctor and list-checks schemas list, derived from the check registry.

The list is the id rule's `examples` (a JSON Schema annotation): validation stays the id
`pattern`, so a report written by a newer neuron-env with a check this one does not know still
validates (fleet reads reports from many versions). The list tells a consumer every id this
version can write. `tests/unit/test_check_registry.py` fails while a schema's list differs from
the registry; `python -m tests.helpers.schema_ids` rewrites both schemas from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# schema -> the path to its check-id rule
ID_RULES: dict[str, tuple[str, ...]] = {
    "doctor": ("properties", "results", "items", "properties", "id"),
    "checks": ("properties", "checks", "items", "properties", "id"),
}


def registered_ids() -> list[str]:
    """Every registered check id, opt-in ones included, in report order."""
    from neuron_env import checks

    return [c.id for c in checks.registered()]


def schema_path(name: str, repo: Path = REPO) -> Path:
    return repo / "neuron_env" / "schemas" / f"{name}.schema.json"


def id_rule(doc: dict[str, Any], name: str) -> dict[str, Any]:
    node = doc
    for key in ID_RULES[name]:
        node = node[key]
    return node


def write(repo: Path = REPO) -> list[str]:
    """Rewrite each schema's id list from the registry; the names of the schemas changed."""
    changed = []
    ids = registered_ids()
    for name in ID_RULES:
        path = schema_path(name, repo)
        doc = json.loads(path.read_text(encoding="utf-8"))
        rule = id_rule(doc, name)
        if rule.get("examples") != ids:
            rule["examples"] = ids
            path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    print("rewritten:", ", ".join(write()) or "nothing (the lists already match the registry)")
