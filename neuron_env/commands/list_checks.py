"""`doctor --list-checks`: every check id, its category, what it checks and its docs link."""

from __future__ import annotations

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.report.envelope import envelope
from neuron_env.report.model import CATEGORIES, Document

SCHEMA = "neuron-env.checks/1"


def rows(matrix: str | None) -> list[dict]:
    """One row per registered check (checks.registered(): THE list, opt-in ones included),
    each derived from its record; docs from the matrix's [docs] table (the id, then the
    category), else the record's own."""
    m = catalog.select(matrix)
    return [{"id": c.id, "category": c.category,
             "category_title": CATEGORIES.get(c.category, c.category), "about": c.about,
             "docs": m.doc(c.id) or m.doc(c.category) or c.docs, "opt_in": c.opt_in}
            for c in checks.registered()]


def text(doc: dict) -> str:
    width = max((len(r["id"]) for r in doc["checks"]), default=10)
    lines = []
    for r in doc["checks"]:
        lines.append(f"{r['id']:<{width}}  {r['about']}" + (" (opt-in)" if r["opt_in"] else ""))
        if r["docs"]:
            lines.append(f"{'':<{width}}  docs: {r['docs']}")
    return "\n".join(lines) + "\n"


def run(matrix: str | None) -> Document:
    body = envelope(SCHEMA, 0, matrix={"release": catalog.select(matrix).release},
                    checks=rows(matrix))
    return Document(body, text)
