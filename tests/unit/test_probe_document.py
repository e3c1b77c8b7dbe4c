"""inside/probe.py writes its document without the json module (dumps), and sends files that
hold JSON back as text, which probes/interpreter.py parses: the facts are what they were."""

from __future__ import annotations

import importlib.util
import json

from hypothesis import given
from hypothesis import strategies as st

from neuron_env.inside import MARKER, script
from neuron_env.probes import interpreter

_spec = importlib.util.spec_from_file_location("probe_under_test", script("probe.py"))
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)

SCALARS = st.none() | st.booleans() | st.integers() | st.text()  # lone surrogates included
DOCS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(), inner, max_size=4), max_leaves=12)


@given(DOCS)
def test_dumps_is_json(doc):
    assert json.loads(probe.dumps(doc)) == doc


def test_probe_imports_no_json_module():
    text = script("probe.py").read_text()
    assert "import json" not in text and "import re" not in text


class _Done:
    """What proc.spawn(...).result() gives, as far as finish_probe reads it."""

    def __init__(self, doc: dict) -> None:
        self.ok, self.returncode = True, 0
        self.stdout = "noise\n" + MARKER + probe.dumps(doc) + MARKER + "\n"

    def result(self):
        return self


def _facts(**doc):
    base = {"python": {"version": "3.12.4", "prefix": "/v"}, "distributions": [],
            "manifest_text": None, "manifest_path": "/v/.neuron-env/install-manifest.json"}
    return interpreter.finish_probe("/v/bin/python", "--python", _Done({**base, **doc}))


def test_direct_url_and_manifest_are_parsed_here():
    dists = [{"name": "nki", "version": "0.7.0", "location": "/v/nki-0.7.0.dist-info",
              "direct_url_text": json.dumps({"url": "file:///w/nki.whl"})},
             {"name": "Torch", "version": "2.14.0", "location": "/v/t", "direct_url_text": "{"},
             {"name": "pip", "version": "24", "location": "/v/p", "direct_url_text": None}]
    t = _facts(distributions=dists, manifest_text=json.dumps({"status": "complete"}))
    assert t.dist("nki").direct_url == {"url": "file:///w/nki.whl"}
    assert t.dist("torch").direct_url is None and t.dist("pip").direct_url is None
    assert t.manifest == {"status": "complete"} and t.manifest_error is None


def test_a_broken_or_empty_manifest_is_reported():
    for text in ("{not json", ""):
        t = _facts(manifest_text=text)
        assert t.manifest is None
        assert t.manifest_error.startswith("/v/.neuron-env/install-manifest.json is not valid "
                                           "JSON: "), t.manifest_error
    assert _facts(manifest_text="[1]").manifest is None  # JSON, but no manifest


def _headers_whole_file(path):
    """The probe's header reading before it stopped at the blank line: the whole file (up to
    256 KiB) decoded and split; the reference the piecewise reader must equal."""
    with open(path, "rb") as f:
        text = f.read(256 * 1024).decode("utf-8", "replace")
    name = version = None
    pinned = []
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "name" and name is None:
            name = value.strip()
        elif sep and key.strip().lower() == "version" and version is None:
            version = value.strip()
        elif sep and key.strip().lower() == "requires-dist" and probe._pinned(value.strip()):
            pinned.append(value.strip())
    return name, version, None, pinned


@given(st.lists(st.sampled_from(["Classifier: Programming Language :: Python :: 3",
                                 "Requires-Dist: numpy>=1.26; extra == 'x'", "Name: é-pkg",
                                 "Version: 2.13.0", "Summary: ünïcode \u2028 text", "\r", " ",
                                 "Name: later", "x" * 5000, "Version: 9", "", "body: Name: no"]),
                max_size=60),
       st.integers(0, 9000))
def test_the_header_block_is_read_in_pieces_with_the_same_answer(tmp_path_factory, lines, pad):
    """Headers longer than the first piece, a character cut at a piece's edge, no blank line,
    a long body after the blank line: the same Name and Version as reading the whole file."""
    path = tmp_path_factory.mktemp("m") / "METADATA"
    path.write_bytes(("Metadata-Version: 2.1\nX-Pad: " + "é" * pad + "\n" + "\n".join(lines)
                      + "\n\n" + "Name: from-the-body\n" * 3000).encode())
    assert probe._headers(str(path)) == _headers_whole_file(str(path))
