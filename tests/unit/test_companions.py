"""backend.companions (pure: facts -> verdict) and the [[torch_companions]] pairing data."""

from __future__ import annotations

import pytest

from neuron_env import checks
from neuron_env.errors import MatrixError
from neuron_env.matrix import catalog
from neuron_env.matrix.loader import parse_text
from neuron_env.probes.companions import CompanionImports
from neuron_env.util.record import replace
from tests.helpers.cli import REPO
from tests.helpers.facts import host, target

M = catalog.select("2.33")
CTX = checks.Context(python_flag="/venv/bin/python")
CPU = "https://download.pytorch.org/whl/cpu"
NMS = {"error": "RuntimeError: operator torchvision::nms does not exist", "cause": None}
EMULATED = {"torch": "2.13.0+cpu", "neuron-emulator": "0.1.0"}


def one(packages, imports=None, ctx=CTX):
    facts = replace(host(tgt=target(packages)), companions=imports)
    return checks.run_checks(facts, M, ctx, ["backend.companions"])[0]


def imported(**failures):
    mods = {"torchvision": None, "torchaudio": None, "torchao": None}
    mods.update(failures)
    return CompanionImports(torch_version="2.13.0+cpu", modules=mods, seconds=1.4)


# -- the pairing data -------------------------------------------------------------------------
def test_233_pairs_each_torch_with_sourced_torchvision_and_torchaudio():
    tv13, tv14 = M.torch_companion("torchvision", "2.13"), M.torch_companion("torchvision", "2.14")
    assert str(tv13.spec) == "==0.28.*" and str(tv14.spec) == "==0.29.*"
    assert M.source_by_id(tv13.source).url == "https://pypi.org/project/torchvision/0.29.2/"
    assert "v0.29.2" in M.source_by_id(tv14.source).url
    ta = M.torch_companion("torchaudio", "2.13")
    assert ta.spec.contains("2.11.0") and ta.spec.contains("2.13.0")
    assert not ta.spec.contains("2.14.0") and not ta.spec.contains("2.10.0")
    ao = M.torch_companion("torchao", "2.14")
    assert ao.source is None and "extrapolated" in ao.assumed
    assert {c.torch for c in M.torch_companions} == {p.torch_minor for p in M.pairs}


ROW = '\n[[torch_companions]]\nname = "{n}"\ntorch = "{t}"\nspec = "{s}"\n{extra}\n'


def with_rows(*rows):
    text = (REPO / "matrices/neuron-2.33.toml").read_text()
    start = text.index("[[torch_companions]]")
    end = text.index("[[indexes]]")
    return text[:start] + "".join(ROW.format(**r) for r in rows) + "\n" + text[end:]


SRC = 'source = "torchvision-table"'


@pytest.mark.parametrize("rows, words", [
    ([dict(n="torchvision", t="2.13", s="==0.28.*", extra=SRC)] * 2, "duplicate pairing"),
    ([dict(n="torchvision", t="2.12", s="==0.27.*", extra=SRC)], "no [[pairs]] entry has torch"),
    ([dict(n="torchvision", t="2.13", s="==0.28.*", extra=SRC),
      dict(n="torchvision", t="2.14", s="==0.28.*", extra=SRC)], "one torchvision build"),
    ([dict(n="torchvision", t="2.13", s="==0.28.*", extra="")], "exactly one of 'source'"),
    ([dict(n="torchvision", t="2.13", s="==0.28.*", extra=SRC + '\nassumed = "x"')],
     "exactly one of 'source'"),
    ([dict(n="torchvision", t="2.13", s="==0.28.*", extra='source = "nowhere"')],
     "is not declared in [[sources]]"),
    ([dict(n="torchvision", t="2.13.0", s="==0.28.*", extra=SRC)], "not a torch minor"),
    ([dict(n="torchvision", t="2.13", s=">=1,<1", extra=SRC)], "admits no version"),
])
def test_validate_rejects_contradictions(rows, words):
    with pytest.raises(MatrixError) as ei:
        parse_text(with_rows(*rows), "neuron-2.33.toml")
    assert any(words in p.message for p in ei.value.problems), ei.value.problems


def test_rows_for_different_torch_minors_and_ranges_are_accepted():
    m = parse_text(with_rows(dict(n="torchaudio", t="2.13", s=">=2.11,<2.14", extra=SRC),
                             dict(n="torchaudio", t="2.14", s=">=2.11,<2.15", extra=SRC)),
                   "neuron-2.33.toml")
    assert len(m.torch_companions) == 2


# -- the check ----------------------------------------------------------------------------------
def test_no_companion_skips_and_pays_nothing():
    r = one(EMULATED)
    assert r.status == "skip" and "torchvision" in r.summary


def test_matching_cpu_builds_that_import_pass():
    r = one({**EMULATED, "torchvision": "0.28.0+cpu", "torchaudio": "2.13.0+cpu"}, imported())
    assert r.status == "pass", r.summary
    assert "torchvision 0.28.0+cpu" in r.summary and "import probe 1.4s" in r.summary
    assert r.expected["torchvision"] == "torchvision==0.28.*"


def test_pypi_torchvision_beside_cpu_torch_fails_with_the_import_error_and_the_cpu_index():
    r = one({**EMULATED, "torchvision": "0.28.0"}, imported(torchvision=NMS))
    assert r.status == "fail"
    assert "operator torchvision::nms does not exist" in r.summary
    assert r.fix_command == ("/venv/bin/python -m pip install --force-reinstall --no-deps "
                             f"'torchvision==0.28.*' --index-url {CPU}")
    assert r.fix_safe and "from https://download.pytorch.org/whl/cpu" in r.fix


def test_the_chained_cause_is_shown():
    r = one({**EMULATED, "torchvision": "0.28.0"}, imported(torchvision={
        "error": "ImportError: cannot load torchvision", "cause": "OSError: libcudart.so.13"}))
    assert r.status == "fail" and "(cause: OSError: libcudart.so.13)" in r.summary


def test_variant_mismatch_without_a_probe_warns():
    r = one({**EMULATED, "torchvision": "0.28.0"})
    assert r.status == "warn" and "PyPI's default (CUDA) build" in r.summary
    assert "import not probed" in r.summary and "--index-url" in r.fix_command


def test_a_companion_for_another_torch_fails_with_the_matching_spec():
    r = one({**EMULATED, "torchvision": "0.29.0+cpu"}, imported())
    assert r.status == "fail" and "not built for torch 2.13" in r.summary
    assert "'torchvision==0.28.*'" in r.fix_command


def test_an_assumed_pairing_only_warns_and_says_so():
    r = one({**EMULATED, "torchao": "0.20.0+cpu"}, imported())
    assert r.status == "warn" and "assumed pairing" in r.summary


def test_a_mirror_override_is_the_fix_index():
    ctx = checks.Context(python_flag="/venv/bin/python",
                         index_overrides={"pytorch-cpu": "https://mirror.example/cpu"})
    r = one({**EMULATED, "torchvision": "0.28.0"}, imported(torchvision=NMS), ctx)
    assert r.fix_command.endswith("--index-url https://mirror.example/cpu")


def test_a_pypi_torch_gets_the_pypi_build():
    r = one({"torch": "2.13.0", "torchvision": "0.28.0+cpu"},
            replace(imported(torchvision=NMS), torch_version="2.13.0"))
    assert r.status == "fail" and "--index-url" not in r.fix_command


def test_a_torch_that_does_not_import_warns():
    r = one({**EMULATED, "torchvision": "0.28.0+cpu"},
            CompanionImports(torch_error="ImportError: libtorch_cpu.so", seconds=0.2))
    assert r.status == "warn" and "torch does not import" in r.summary


def test_a_torch_minor_without_pairing_gives_prose_not_a_command():
    r = one({"torch": "2.12.0+cpu", "torchvision": "0.28.0"}, CompanionImports(
        torch_version="2.12.0+cpu", modules={"torchvision": NMS}, seconds=1.0))
    assert r.status == "fail" and r.fix_command is None and "no pairing for torch 2.12" in r.fix
