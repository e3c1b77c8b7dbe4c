"""dashboards/: the Grafana dashboard and the Prometheus alerting rules, checked against what
neuron-env really emits (doctor --format prometheus on fixture hosts, parsed by
prometheus_client), by promtool (check rules, and unit tests of the alerts on series made from
the rendered textfile) and by Grafana's dashboard model (grafana-foundation-sdk)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import roots
from tests.helpers.cli import REPO, run_cli
from tests.helpers.snippets import snippet

pytestmark = pytest.mark.integration

DASHBOARD = REPO / "dashboards" / "neuron-env.json"
RULES = REPO / "dashboards" / "neuron-env-alerts.yml"
SCRAPE_LABELS = {"instance", "job"}  # added by Prometheus when it scrapes node_exporter
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian "
                                    "package `prometheus`; .ci/run installs it)")

Samples = list[tuple[str, dict[str, str], float]]


def _parse(text: str) -> Samples:
    from prometheus_client.parser import text_string_to_metric_families

    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text)
            for s in f.samples]


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Samples]:
    """Real output: doctor on a healthy and a failing fixture host, and a report that holds
    collectives results (they need a device run: built from rows as the ranks report them)."""
    base = tmp_path_factory.mktemp("hosts")
    out: dict[str, Samples] = {}
    for name, root in (("good", roots.trn2_host(base / "good")),
                       ("bad", roots.trn2_host(base / "bad", os="debian-12"))):
        res = run_cli("doctor", "--root", str(root), "--only", "os,instance,driver",
                      "--format", "prometheus")
        assert res.returncode in (0, 1), res.stderr
        out[name] = _parse(res.stdout)
    assert {s[1]["verdict"] for s in out["bad"] if s[0] == "neuron_env_doctor_verdict"
            and s[2] == 1} == {"fail"}
    from neuron_env.collectives.results import op_results
    from neuron_env.report.model import Report
    from neuron_env.report.render import render

    rows = [{"op": "all_reduce", "size_bytes": n, "time_us": 10.0 + n / 1e4,
             "algbw_gbps": n / (10.0 + n / 1e4) / 1e3, "busbw_gbps": n / (10.0 + n / 1e4) / 1e3,
             "wrong": 0} for n in (8, 65536, 1 << 20)]
    rep = Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"},
                 {"release": "2.33"}, {}, tuple(op_results(rows, ("all_reduce",))), 0)
    out["collectives"] = _parse(render(rep, "prometheus"))
    return out


def catalog(emitted: dict[str, Samples]) -> dict[str, dict[str, set[str]]]:
    """metric name -> label -> the values seen."""
    cat: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for samples in emitted.values():
        for name, labels, _ in samples:
            _ = cat[name]  # a metric without labels is still a metric
            for k, v in labels.items():
                cat[name][k].add(v)
    return cat


# --- a small PromQL reader: the metric names, label matchers and grouping labels ----------

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")'
                    r'|(?P<op>=~|!~|!=|==|>=|<=|[=<>{}(),\[\]+\-*/^%])'
                    r'|(?P<num>\d+(?:\.\d+)?[smhdwy]?)|(?P<id>[A-Za-z_:][\w:]*)|(?P<var>\$\w+))')
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset"}


def tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(expr.rstrip()):
        m = _TOKEN.match(expr, pos)
        assert m and m.end() > pos, f"cannot read {expr[pos:]!r} in {expr!r}"
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def references(expr: str) -> tuple[set[str], list[tuple[str | None, str, str, str]], set[str]]:
    """(metric names, label matchers (metric or None, label, op, value), grouping labels)."""
    toks = tokens(expr)
    metrics, matchers, grouping = set(), [], set()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "id" and text in KEYWORDS and nxt == "(":
            j = i + 2
            while toks[j][1] != ")":
                if toks[j][0] == "id":
                    grouping.add(toks[j][1])
                j += 1
            i = j + 1
            continue
        if kind == "id" and text not in KEYWORDS and nxt not in ("(", "by", "without"):
            metrics.add(text)
            if nxt == "{":
                j = i + 2
                while toks[j][1] != "}":
                    if toks[j][0] == "id":
                        matchers.append((text, toks[j][1], toks[j + 1][1],
                                         json.loads(toks[j + 2][1])))
                        j += 3
                    else:
                        j += 1
                i = j
        i += 1
    return metrics, matchers, grouping


def check_expr(expr: str, cat: dict[str, dict[str, set[str]]]) -> list[str]:
    """What `expr` uses that neuron-env does not emit (empty: all of it is real)."""
    metrics, matchers, grouping = references(expr)
    ours = {m for m in metrics if m.startswith("neuron_env")}
    problems = [f"metric {m} is not emitted" for m in metrics - set(cat) if m in ours
                or m not in {"time", "vector"}]
    problems += [f"{m} matched without the neuron_env_ prefix" for m in metrics
                 if m not in ours and m not in {"time", "vector"}]
    for metric, label, op, value in matchers:
        known = cat.get(metric or "", {})
        if label in SCRAPE_LABELS:
            continue
        if label not in known:
            problems.append(f"{metric} has no label {label}")
            continue
        if "$" in value:
            continue
        wanted = value.split("|") if op in ("=~", "!~") else [value]
        problems += [f"{metric}{{{label}}} never has the value {v!r}" for v in wanted
                     if v not in known[label]]
    for label in grouping - SCRAPE_LABELS:
        problems += [f"grouping by {label}, which {m} lacks" for m in ours
                     if m in cat and label not in cat[m]]
    return problems


def _exprs_anywhere(node: Any) -> list[str]:
    """Every "expr" in a dashboard, wherever it is: a panel's targets, a panel inside a
    (collapsed) row, an annotation query, a library panel's model."""
    if isinstance(node, dict):
        own = [node["expr"]] if isinstance(node.get("expr"), str) else []
        return own + [e for k, v in node.items() if k != "expr" for e in _exprs_anywhere(v)]
    if isinstance(node, list):
        return [e for v in node for e in _exprs_anywhere(v)]
    return []


def dashboard_exprs(dash: dict[str, Any] | None = None) -> list[str]:
    dash = json.loads(DASHBOARD.read_text()) if dash is None else dash
    exprs = _exprs_anywhere(dash)
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.*), (\w+)\)", var["query"]["query"])
            assert m, var
            exprs.append(f"count by ({m.group(2)}) ({m.group(1)})")
    return exprs


def rule_exprs() -> list[str]:
    return [r["expr"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def test_the_reader_catches_what_is_not_emitted(emitted: dict[str, Samples]) -> None:
    cat = catalog(emitted)
    assert check_expr('neuron_env_doctor_verdict{verdict="fail"} == 1', cat) == []
    assert check_expr('neuron_env_doctor_verdicts == 1', cat)
    assert check_expr('neuron_env_doctor_verdict{state="fail"}', cat)
    assert check_expr('neuron_env_doctor_verdict{verdict=~"fail|failed"}', cat)
    assert check_expr('count by (node) (neuron_env_check_status)', cat)
    assert check_expr('up{job="x"}', cat)


def test_every_expression_of_a_dashboard_is_read_nested_ones_too(
        emitted: dict[str, Samples]) -> None:
    """A panel inside a collapsed row, or an annotation, is checked like a top-level panel."""
    dash = {"panels": [{"type": "row", "collapsed": True, "panels": [
        {"type": "stat", "targets": [{"expr": "neuron_env_doctor_verdicts == 1"}]}]}],
        "annotations": {"list": [{"expr": "changes(neuron_env_nothing[5m]) > 0"}]},
        "templating": {"list": []}}
    exprs = dashboard_exprs(dash)
    assert len(exprs) == 2
    assert all(check_expr(e, catalog(emitted)) for e in exprs)
    real = json.loads(DASHBOARD.read_text())
    assert len(dashboard_exprs(real)) >= len(real["panels"])


def test_dashboard_and_rules_use_only_emitted_metrics(emitted: dict[str, Samples]) -> None:
    cat = catalog(emitted)
    assert "neuron_env_collectives_busbw_bytes_per_second" in cat
    used = set()
    for expr in dashboard_exprs() + rule_exprs():
        assert check_expr(expr, cat) == [], expr
        used |= {m for m in references(expr)[0] if m.startswith("neuron_env")}
    # the dashboard shows everything the brief asks for
    assert {"neuron_env_doctor_verdict", "neuron_env_check_status",
            "neuron_env_doctor_duration_seconds", "neuron_env_doctor_last_run_timestamp_seconds",
            "neuron_env_collectives_busbw_bytes_per_second", "neuron_env_info"} <= used


def test_dashboard_is_a_grafana_dashboard() -> None:
    from grafana_foundation_sdk.cog import plugins
    from grafana_foundation_sdk.models import dashboard, prometheus

    plugins.register_default_plugins()
    raw = json.loads(DASHBOARD.read_text())
    model = dashboard.Dashboard.from_json(raw)
    assert model.title and model.uid and isinstance(model.schema_version, int)
    assert model.schema_version >= 36  # datasource references as objects
    assert len(model.panels) == len(raw["panels"]) >= 8
    ids = [p.id_val for p in model.panels]
    assert len(set(ids)) == len(ids)
    for p in model.panels:
        assert isinstance(p, dashboard.Panel) and p.type_val and p.title and p.targets
        assert p.grid_pos.x >= 0 and p.grid_pos.x + p.grid_pos.w <= 24
        refs = [t.ref_id for t in p.targets]
        assert len(set(refs)) == len(refs)
        for t in p.targets:
            assert isinstance(t, prometheus.Dataquery), type(t)
            ds = t.datasource if isinstance(t.datasource, dict) else t.datasource.to_json()
            assert t.expr and t.ref_id and ds == {"type": "prometheus", "uid": "${datasource}"}
    variables = {v.name: v for v in model.templating.list_val}
    assert variables["datasource"].type_val == "datasource"
    assert variables["datasource"].query == "prometheus"
    assert {"job", "instance"} <= set(variables)
    # and it round-trips: nothing in the file is lost on Grafana's model
    again = json.loads(json.dumps(model, default=lambda o: o.to_json()))
    assert [p["targets"][0]["expr"] for p in again["panels"]] == \
        [p["targets"][0]["expr"] for p in raw["panels"]]


@pytest.mark.slow
def test_the_collectives_emitter_writes_what_the_dashboard_reads(
        torch_python: str, emitted: dict[str, Samples]) -> None:
    """The other emitter: `collectives --format prometheus`, run for real (2 CPU ranks)."""
    res = run_cli("collectives", "--python", torch_python, "--device", "cpu", "--world-size",
                  "2", "--ops", "all_reduce", "--sizes", "1K,64K", "--iterations", "2",
                  "--format", "prometheus", timeout=240)
    assert res.returncode == 0, res.stderr
    real = _parse(res.stdout)
    assert any(n == "neuron_env_collectives_busbw_bytes_per_second" and v > 0
               for n, _, v in real)
    cat = catalog({**emitted, "collectives-run": real})
    for expr in dashboard_exprs() + rule_exprs():
        assert check_expr(expr, cat) == [], expr
    # what it emits under a name the dashboard reads has the labels the dashboard uses
    busbw = catalog({"run": real})["neuron_env_collectives_busbw_bytes_per_second"]
    assert set(busbw) == set(catalog(emitted)["neuron_env_collectives_busbw_bytes_per_second"])


@needs_promtool
def test_rules_pass_promtool_and_dashboard_queries_parse(tmp_path: Path) -> None:
    res = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    # every dashboard query, as a recording rule: promtool parses it as PromQL
    rec = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"neuron_env:dashboard_query_{i}", "expr": e}
        for i, e in enumerate(dashboard_exprs())]}]}
    (tmp_path / "dash.yml").write_text(yaml.safe_dump(rec))
    res = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "dash.yml")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    (tmp_path / "bad.yml").write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [
        {"record": "x:y", "expr": "count by (a (neuron_env_info)"}]}]}))
    assert subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "bad.yml")],
                          capture_output=True, timeout=60).returncode == 1


def _series(samples: Samples, instance: str, values: Any) -> list[dict[str, str]]:
    out = []
    for name, labels, value in samples:
        sel = ",".join(f'{k}="{v}"' for k, v in sorted({**labels, "instance": instance,
                                                        "job": "node"}.items()))
        out.append({"series": f"{name}{{{sel}}}", "values": values(name, value)})
    return out


@needs_promtool
def test_alerts_fire_on_rendered_output(emitted: dict[str, Samples], tmp_path: Path) -> None:
    """promtool's rule unit tests, on series made from the real textfiles: the failing host
    alerts after 15 minutes, the healthy one never; a textfile that stops being rewritten
    (its timestamp stuck at 0) is stale after 3 hours."""
    def steady(name: str, value: float) -> str:
        return f"{value:g}x300" if name != "neuron_env_doctor_last_run_timestamp_seconds" \
            else "0+60x300"   # rewritten every minute

    def stuck(name: str, value: float) -> str:
        return "0x300" if name == "neuron_env_doctor_last_run_timestamp_seconds" \
            else f"{value:g}x300"

    failing_checks = [s for s in emitted["bad"] if s[0] == "neuron_env_check_status"
                      and s[1]["status"] == "fail" and s[2] == 1]
    assert failing_checks
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": _series(emitted["good"], "good:9100", steady)
        + _series(emitted["bad"], "bad:9100", steady)
        + _series(emitted["collectives"], "old:9100", stuck),
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "NeuronEnvDoctorFailing", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "NeuronEnvDoctorFailing", "exp_alerts": [
                {"exp_labels": {"severity": "critical", "verdict": "fail",
                                "instance": "bad:9100", "job": "node"},
                 "exp_annotations": _annotations("NeuronEnvDoctorFailing",
                                                 {"instance": "bad:9100", "verdict": "fail"})}]},
            {"eval_time": "20m", "alertname": "NeuronEnvCheckFailing", "exp_alerts": [
                {"exp_labels": {**s[1], "severity": "warning", "instance": "bad:9100",
                                "job": "node"},
                 "exp_annotations": _annotations("NeuronEnvCheckFailing", {
                     **s[1], "instance": "bad:9100"})} for s in failing_checks]},
            {"eval_time": "2h", "alertname": "NeuronEnvDoctorStale", "exp_alerts": []},
            {"eval_time": "4h", "alertname": "NeuronEnvDoctorStale", "exp_alerts": [
                {"exp_labels": {"severity": "warning", "instance": "old:9100", "job": "node"},
                 "exp_annotations": _annotations("NeuronEnvDoctorStale",
                                                 {"instance": "old:9100"}, value="4h 0m 0s")}]},
        ]}]}
    (tmp_path / "t.yml").write_text(yaml.safe_dump(test, sort_keys=False))
    res = subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "t.yml")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def _annotations(alert: str, labels: dict[str, str], value: str = "") -> dict[str, str]:
    """The rule's annotations with {{ $labels.x }} and {{ $value | humanizeDuration }} filled."""
    rule = next(r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
                if r["alert"] == alert)
    out = {}
    for k, v in rule["annotations"].items():
        v = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], v)
        out[k] = v.replace("{{ $value | humanizeDuration }}", value)
    return out


# --- the docs' snippets -----------------------------------------------------------------

def test_docs_textfile_snippet_writes_what_the_dashboard_reads(tmp_path: Path) -> None:
    script = snippet("node-textfile")
    root = roots.trn2_host(tmp_path / "host")
    textdir = tmp_path / "textfile_collector"
    textdir.mkdir()
    cmd = script.replace("/var/lib/node_exporter/textfile_collector", str(textdir))
    assert cmd != script and cmd.startswith("neuron-env doctor")
    args = [*cmd.split()[1:], "--root", str(root), "--only", "os,instance"]
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    names = {s[0] for s in _parse((textdir / "neuron_env.prom").read_text())}
    assert "neuron_env_doctor_verdict" in names


def test_docs_prometheus_and_grafana_snippets() -> None:
    prom = yaml.safe_load(snippet("prometheus-rules"))
    assert prom["rule_files"] == ["neuron-env-alerts.yml"]
    grafana = yaml.safe_load(snippet("grafana-provisioning"))
    provider = grafana["providers"][0]
    assert grafana["apiVersion"] == 1 and provider["type"] == "file"
    assert provider["options"]["path"].endswith("/neuron-env")


@needs_promtool
def test_docs_promtool_snippet_runs() -> None:
    cmd = snippet("promtool-check").split()
    assert cmd[:3] == ["promtool", "check", "rules"]
    res = subprocess.run([PROMTOOL, *cmd[1:]], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and "SUCCESS" in res.stdout, res.stdout + res.stderr
