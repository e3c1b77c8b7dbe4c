"""Control characters from a host never reach a terminal raw nor make a JUnit file ill-formed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from neuron_env.guards.text import escape_controls, xml_safe
from neuron_env.probes.host import make_root, parse_os_release, probe_os
from neuron_env.report import junit, text
from neuron_env.report.model import Report, Result
from tests.helpers.roots import make_root as make_fixture_root

HOSTILE = "Ubuntu\x01 26.04 \x1b]0;owned\x07\x1b[2J\x1b[31mred\x0c\ud800"


def _report(summary: str) -> Report:
    res = (Result("os.release", "os", "fail", summary, observed={"pretty": summary},
                  fix=f"fix {summary}", details={"raw": summary}),
           Result("os.arch", "os", "warn", summary))
    return Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"},
                  {"release": "2.33"}, {}, res, 1)


def test_junit_is_well_formed_xml_with_control_characters():
    xml = junit.render(_report(HOSTILE))
    root = ET.fromstring(xml.encode("utf-8"))  # raises on an ill-formed document
    fail = root.find(".//failure")
    assert "\\x01" in fail.get("message") and "\\x1b" in fail.text


def test_terminal_text_escapes_controls_but_keeps_its_own_colours():
    for colour in (False, True):
        out = text.render(_report(HOSTILE), verbose=True, colour=colour)
        assert "\x01" not in out and "\x07" not in out and "\x1b]" not in out
        assert "\x1b[2J" not in out and "\\x1b]0;owned" in out
        assert ("\x1b[31m" in out) is colour  # neuron-env's own marks, only when colouring
    assert escape_controls("a\tb\nc\x00") == "a\tb\nc\\x00"
    # CR too: it rewrites a terminal line and YAML/Slurm/engines read it as a line break
    assert xml_safe("ok\t\n\r\x1b") == "ok\t\n\\x0d\\x1b"


def test_os_release_values_are_escaped_at_the_source(tmp_path):
    kv = parse_os_release(f'ID=ubuntu\nPRETTY_NAME="{HOSTILE}"\n')
    assert "\x1b" not in kv["PRETTY_NAME"] and "\\x1b" in kv["PRETTY_NAME"]
    root = make_fixture_root(tmp_path / "r", os=None,
                             os_release_text="ID=ubu\x01ntu\nVERSION_ID=\"26.04\x1b[2J\"\n")
    facts = probe_os(make_root(str(root)))
    assert facts.id == "ubu\\x01ntu" and facts.version_id == "26.04\\x1b[2J"
