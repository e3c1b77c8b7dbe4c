"""Options that need another, through the real CLI: refused with exit 2 before any work (in
JSON mode, the error envelope), naming what they need."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import run_cli

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("argv, needs", [
    (["trial", "builtin:mlp", "--strategy", "fsdp2"], "--world-size"),
    (["trial", "builtin:mlp", "--nnodes", "2"], "--world-size"),
    (["trial", "builtin:mlp", "--collect", "/nonexistent"], "--world-size"),
    (["trial", "builtin:mlp", "--compile-backend", "inductor"], "--compile"),
    (["trial", "builtin:mlp", "--lr", "0.1"], "--steps"),
    (["doctor", "--yes"], "--fix"),
    (["collectives", "--nodes", "4"], "--print-launch"),
])
def test_an_option_without_its_partner_is_refused(argv, needs):
    p = run_cli(*argv, "--format", "json")
    assert p.returncode == 2, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    assert doc["error"]["code"] == "usage" and needs in doc["error"]["message"]
    assert "Traceback" not in p.stderr
