"""The one sanitiser (guards.text.clean) at every renderer, pure parts (#25 items 15, 16, 26):
a trial whose exception text holds a lone surrogate, Kubernetes manifests from hostile values,
Prometheus label values."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from neuron_env.errors import UsageError
from neuron_env.fleet import k8s
from neuron_env.guards.text import clean
from neuron_env.report.model import Report, exit_code
from neuron_env.report.render import render, render_error
from neuron_env.trial import runner, views
from tests.unit.test_trial import OPTS, doc_of

SURROGATE = "boom \udcff\ud800 \x1b]0;t\x07 end"


def _trial_report() -> Report:
    """The trial's own parsing of a crafted inside document whose exception text holds lone
    surrogates (json.dumps writes them as \\udcff escapes, json.loads gives them back)."""
    eager = {"name": "eager", "status": "error", "summary": f"RuntimeError: {SURROGATE}",
             "ok": False, "error": SURROGATE, "traceback": f"Traceback\n  {SURROGATE}\n"}
    tr = runner.finish(doc_of(eager), "py", OPTS)
    return Report("neuron-env.trial/1", {"name": "neuron-env", "version": "0"}, None,
                  {"interpreter": {"path": "py"}, "model": f"m{SURROGATE}", "device": "neuron",
                   "dtype": "float32", "emulated": True, **tr.info}, tr.results,
                  exit_code(tr.results), view=views.render_text,
                  markdown=views.render_markdown)


@pytest.mark.parametrize("fmt", ["junit", "markdown", "text", "json", "nhc", "npd",
                                 "prometheus"])
def test_trial_with_a_lone_surrogate_renders_valid_output(fmt):
    rep = _trial_report()
    assert "\udcff" in rep.results[0].summary  # the attack got through the parser
    out = render(rep, fmt)
    out.encode("utf-8")  # what writing it to stdout does: no UnicodeEncodeError
    assert "\x1b" not in out and "\x07" not in out
    if fmt == "junit":
        ET.fromstring(out.encode("utf-8"))
    elif fmt == "json":
        json.loads(out)
    elif fmt != "prometheus":
        assert "\\udcff" in out  # shown, visibly


def test_error_documents_are_sanitised():
    err = {"code": "config", "message": "--matrix '/tmp/nope\x01\udcff\x1b[2J.toml'",
           "hint": "h\x1b]0;x\x07"}
    for fmt in ("junit", "markdown", "nhc", "npd", "prometheus", "text"):
        out = render_error("neuron-env.doctor/1", 2, err, fmt)
        out.encode("utf-8")
        assert not any(c in out for c in "\x01\x1b\x07\udcff"), fmt
        if fmt == "junit":
            ET.fromstring(out.encode("utf-8"))


def test_clean_is_the_one_sanitiser():
    assert clean("a\tb\nc\x00\r\x7f\x9b\ud800\ufffe") == "a\tb\nc\\x00\\x0d\\x7f\\x9b\\ud800\\ufffe"
    assert clean("a\tb\nc", one_line=True) == "a\\x09b\\x0ac"
    assert clean("\x1b[31mred\x1b[0m\x1b]0;x", keep_sgr=True) == "\x1b[31mred\x1b[0m\\x1b]0;x"
    assert clean(5) == "5" and clean("Ünïcödé ✓ עברית") == "Ünïcödé ✓ עברית"
    # bidi overrides/isolates (Trojan Source) and Unicode line separators are shown too
    assert clean("i-0abc\u202egnp.exe\u2066x\u2028") == "i-0abc\\u202egnp.exe\\u2066x\\u2028"


HOSTILE = ["a\rkind: Secret\rstringData:\r  x: y", "---\nkind: Secret", "x\x85y\u2028z\u2029",
           'q"uo\\te', "tab\there", "\x00nul\x1b[2J", "😀 non-BMP", " lead", "trail ",
           "#hash", "- dash", ": colon", "{flow}", "'single'", "null", "true", "1e3", "\ufeffbom"]


@pytest.mark.parametrize("value", HOSTILE)
def test_k8s_yaml_round_trips_any_string(value):
    """to_yaml's own quoting: whatever a string holds, yaml.safe_load gives it back and it
    never starts a new document or key."""
    docs = k8s.manifests(doctor_args=["--skip", "aws"])
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    cm["data"]["neuron-env-check.sh"] += value + "\n"
    cm["data"]["extra"] = value
    cm["metadata"]["labels"]["x"] = value
    loaded = list(yaml.safe_load_all(k8s.to_yaml(docs)))
    assert loaded == docs
    assert [d["kind"] for d in loaded] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                           "ConfigMap", "DaemonSet"]


@pytest.mark.parametrize("arg", ["--skip aws\rkind: Secret", "x\ny", "a\x1bb", "t\tab",
                                 "x\u2028y"])
def test_k8s_manifests_refuse_control_characters(arg):
    with pytest.raises(UsageError, match="control character"):
        k8s.manifests(doctor_args=[arg])
    with pytest.raises(UsageError, match="control character"):
        k8s.manifests(namespace=arg)
