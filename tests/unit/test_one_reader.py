"""Issue #36, "one bounded reader" and "numbers finite" (items 2, 13, 14, 16): `--baseline`, the
Pricing API's answer, `--ca-bundle`, and every JSON document neuron-env writes. Pure: files,
FIFOs and device nodes, no process, no network (the trickling server is in
tests/integration/test_one_reader_net.py)."""

from __future__ import annotations

import json
import math
import os
import stat

import pytest

from neuron_env.errors import EXIT_CONFIG, AwsError, BadInput, ConfigurationError, UsageError
from neuron_env.guards import files
from neuron_env.trial import dist_command

GOOD = {"schema": dist_command.BASELINE_SCHEMA, "samples_per_s": 900.0, "step_s": 0.03,
        "usd_per_hour": 1.34, "usd_per_1000_samples": 0.0004, "label": "cpu x2",
        "emulated": False}


def _write(tmp_path, doc_or_text) -> str:
    p = tmp_path / "base.json"
    p.write_text(doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text))
    return str(p)


# -- 14. --baseline (the cost baseline) -----------------------------------------------------------
def test_a_good_cost_baseline_is_read_and_only_its_fields_kept(tmp_path):
    doc = dist_command.read_baseline(_write(tmp_path, dict(GOOD, junk={"x": [1] * 10})))
    assert doc["samples_per_s"] == 900.0 and "junk" not in doc


@pytest.mark.parametrize("case, text, says", [
    ("deep", "[" * 100_000 + "]" * 100_000, "nested"),
    ("deep object", '{"a":' * 200 + "1" + "}" * 200, "nested"),
    ("samples a string", json.dumps(dict(GOOD, samples_per_s="fast")), "not number"),
    ("samples missing", json.dumps({k: v for k, v in GOOD.items() if k != "samples_per_s"}),
     "has no `samples_per_s`"),
    ("samples NaN", json.dumps(dict(GOOD, samples_per_s=float("nan"))), "not a number JSON"),
    ("price Infinity", json.dumps(dict(GOOD, usd_per_hour=float("inf"))), "not a number JSON"),
    ("samples negative", json.dumps(dict(GOOD, samples_per_s=-5)), "expected within"),
    ("samples zero", json.dumps(dict(GOOD, samples_per_s=0)), "must be > 0"),
    ("label a list", json.dumps(dict(GOOD, label=["x"])), "not str"),
    ("a list", "[1, 2]", "not a cost baseline"),
    ("results not a list", json.dumps({"schema": "neuron-env.trial/1", "results": 5}),
     "not a cost baseline"),
    ("results of numbers", json.dumps({"schema": "neuron-env.trial/1", "results": [1, 2]}),
     "not a cost baseline"),
    ("not UTF-8", b"\xff\xfe{}".decode("latin-1"), "not valid JSON"),
])
def test_a_hostile_cost_baseline_is_one_clear_error(tmp_path, case, text, says):
    with pytest.raises(ConfigurationError) as e:
        dist_command.read_baseline(_write(tmp_path, text))
    assert says in e.value.message and e.value.exit_code == EXIT_CONFIG, e.value.message


def test_a_huge_baseline_is_refused_unread(tmp_path):
    p = tmp_path / "huge.json"
    with open(p, "wb") as f:
        f.truncate(dist_command.MAX_BASELINE + 1)  # sparse: nothing is allocated
    with pytest.raises(BadInput, match="larger than"):
        dist_command.read_baseline(str(p))


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_baseline_that_is_a_fifo_or_dev_zero_is_refused_at_once(tmp_path, kind):
    from neuron_env.trial.options import TrialOptions, validate

    p = tmp_path / "base.json"
    if kind == "fifo":
        os.mkfifo(p)
    else:
        p.symlink_to("/dev/zero")
    for read in (lambda: dist_command.read_baseline(str(p)),
                 lambda: validate(TrialOptions(model="builtin:mlp", baseline=str(p)))):
        with pytest.raises(BadInput, match="FIFO" if kind == "fifo" else "device"):
            read()


# -- 13. the Pricing API's answer ------------------------------------------------------------------
def _product(usd: object, unit: str = "Hrs") -> str:
    return json.dumps({"terms": {"OnDemand": {"t": {"priceDimensions": {"d": {
        "unit": unit, "pricePerUnit": {"USD": usd}}}}}}})


@pytest.mark.parametrize("price_list", [
    "not a list", [_product("NaN")], [_product("inf")], [_product("-1")], [_product("cheap")],
    ["{not json"], ["[" * 5000 + "]" * 5000], [json.dumps({"terms": []})],
    [json.dumps({"terms": {"OnDemand": {"t": {"priceDimensions": ["x"]}}}})],
    [json.dumps({"terms": {"OnDemand": {"t": {"priceDimensions": {"d": {"pricePerUnit": 3}}}}}})],
    [json.dumps({"terms": {"OnDemand": {"t": 5}}})], [_product(True)],
])
def test_a_malformed_pricing_answer_is_a_soft_aws_error_never_a_traceback(price_list):
    from neuron_env.aws.pricing import hourly_usd

    with pytest.raises(AwsError) as e:
        hourly_usd(price_list)
    assert e.value.code == "bad-answer" and "malformed" in e.value.message


def test_a_good_pricing_answer_still_gives_its_price():
    from neuron_env.aws.pricing import hourly_usd

    assert hourly_usd([_product("44.5000000000")]) == 44.5
    assert hourly_usd([_product("0.0000000000"), _product("2.5")]) == 2.5
    assert hourly_usd([_product("9", unit="Quantity")]) is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_a_non_finite_price_never_reaches_a_report(bad):
    from neuron_env.cost.prices import choose

    with pytest.raises(UsageError, match="finite"):
        choose(bad, "trn2.48xlarge", "us-east-1", False)


def test_a_non_finite_price_in_the_table_is_refused(tmp_path):
    from neuron_env.cost.prices import load_table

    t = tmp_path / "prices.toml"
    t.write_text('[[price]]\ninstance_type = "x"\nregion = "us-east-1"\nsource = "s"\n'
                 'date = "2026-01-01"\nusd_per_hour = nan\n')
    with pytest.raises(ValueError, match="usd_per_hour"):
        load_table(t)


# -- numbers finite in every document --------------------------------------------------------------
def _documents() -> dict[str, object]:
    from neuron_env.report.envelope import envelope
    from neuron_env.report.model import Document, Report, Result

    nan, inf = float("nan"), float("inf")
    rep = Report("neuron-env.trial/1", {"name": "neuron-env", "version": "0"}, None,
                 {"x": nan}, (Result("trial.cost", "trial", "pass", "s",
                                     details={"this": {"usd_per_hour": inf, "r": [nan, -inf]}},
                                     observed={"v": nan}),), 0, extra={"elapsed_s": nan})
    doc = Document(envelope("neuron-env.collectives-launch/1", 0, script="x", n=nan),
                   lambda b: "x")
    return {"report": rep, "document": doc}


@pytest.mark.parametrize("kind", ["report", "document"])
def test_no_document_carries_a_bare_nan_or_infinity(kind, capsys):
    from neuron_env.report.render import render

    out = render(_documents()[kind], "json")
    assert "NaN" not in out and "Infinity" not in out
    json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c} in the JSON"))
    assert "not a finite number, written as null" in capsys.readouterr().err


def test_the_error_envelope_and_the_cost_baseline_file_are_rfc_json(tmp_path, capsys):
    from neuron_env.report.render import render_error

    out = render_error("neuron-env.trial/1", 2, {"code": "x", "message": "m", "hint": None,
                                                 "v": float("nan")}, "json")
    json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    path = tmp_path / "cost.json"
    dist_command._save(str(path), {"samples_per_s": float("inf"), "schema": "x"})
    assert json.loads(path.read_text())["samples_per_s"] is None


def test_jsonout_finite_replaces_only_non_finite_floats():
    from neuron_env.util.jsonout import finite

    found: list[str] = []
    assert finite({"a": [1, math.nan, "NaN"], "b": 2.5}, "$", found) == \
        {"a": [1, None, "NaN"], "b": 2.5}
    assert found == ["$.a[1]"]


# -- 16. --ca-bundle -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "zero", "missing", "garbage"])
def test_a_ca_bundle_that_is_not_a_pem_file_is_refused_at_once(tmp_path, kind):
    p = tmp_path / "ca.pem"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "zero":
        p.symlink_to("/dev/zero")
    elif kind == "garbage":
        p.write_text("not a certificate\n")
    with pytest.raises(BadInput) as e:
        files.ssl_context(str(p))
    assert e.value.exit_code == EXIT_CONFIG and "--ca-bundle" in e.value.message
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(p).st_mode) and "FIFO" in e.value.message


# -- nothing else parses JSON from someone else ----------------------------------------------
# file -> why its json.loads may bypass guards/files.parse_json (each reads what we produced or a
# tool we run, not what another party controls), or who routes it
OWN_JSON = {
    "neuron_env/guards/files.py": "the one reader",
    "neuron_env/target_python/protocol.py": "our inside script's verdict, from the target we "
                                            "started",
    "neuron_env/collectives/runner.py": "our own probe's one line",
    "neuron_env/probes/interpreter.py": "our own probe script's answer",
    "neuron_env/probes/neuron_ls.py": "neuron-ls's --json-output (the Neuron tools we run)",
    "neuron_env/install/report_parse.py": "pip's --report of the install we ran",
    "neuron_env/matrix/cache.py": "our cache entry, read only when owned by us or root",
    "neuron_env/matrix/importer.py": "bounded and RecursionError-checked; routed by the matrix "
                                     "round (guards/files.parse_json)",
    "neuron_env/matrix/update.py": "bounded; routed by the matrix round (guards/files.parse_json)",
}


def test_untrusted_json_is_parsed_only_by_the_one_reader():
    import ast
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    found = {}
    for path in sorted((repo / "neuron_env").rglob("*.py")):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith("neuron_env/inside/"):  # runs in the target: its own files only
            continue
        calls = [n.lineno for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("loads", "load") and isinstance(n.func.value, ast.Name)
                 and n.func.value.id == "json"]
        if calls and rel not in OWN_JSON:
            found[rel] = calls
    assert not found, f"json parsed outside guards/files.parse_json: {found}"
