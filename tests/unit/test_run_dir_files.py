"""Issue #45 (security round 4): the pure parts of the findings, in-process. The parts that run
other processes (the inside scripts, the emulator, printed launch lines, pasted fix lines) are
in tests/integration/test_printed_lines_run_nothing_else.py and backend/tests/."""

from __future__ import annotations

import json
import math
import os

import pytest

from neuron_env.errors import AwsError


# -- finding 10: one numeric conversion for untrusted numbers -----------------------------------
def _product(usd: object) -> str:
    return json.dumps({"terms": {"OnDemand": {"t": {"priceDimensions": {"d": {
        "unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}}})


@pytest.mark.parametrize("usd", [10 ** 400, -(10 ** 400), "9" * 400, "1e400"])
def test_a_400_digit_price_is_a_soft_aws_error_not_exit_3(usd):
    from neuron_env.aws.pricing import hourly_usd

    with pytest.raises(AwsError) as e:
        hourly_usd([_product(usd)])
    assert e.value.code == "bad-answer" and "finite" in e.value.message


def test_the_one_conversion_never_raises():
    from neuron_env.guards.files import number

    assert number(10 ** 400) == math.inf and number(-(10 ** 400)) == -math.inf
    assert number("2.5") == 2.5 and number(3) == 3.0
    for bad in (True, None, "cheap", [], {}):
        assert math.isnan(number(bad))


# -- finding 12: one release grammar for loader, import, update and the catalog ------------------
@pytest.mark.parametrize("release", ["2.99\n", " 2.99", "1!2.99", "v2.99", "2.99 "])
def test_a_release_the_catalog_cannot_read_back_is_refused_by_the_loader(release):
    from pathlib import Path

    from neuron_env.errors import MatrixError
    from neuron_env.matrix.loader import parse_text

    repo = Path(__file__).resolve().parents[2]
    text = (repo / "matrices" / "neuron-2.33.toml").read_text()
    bad = text.replace('release = "2.33"', f"release = {json.dumps(release)}", 1)
    assert bad != text
    with pytest.raises(MatrixError, match="release"):
        parse_text(bad, "hostile.toml")
    parse_text(text, "good.toml")  # the file itself still loads


def test_the_release_grammar_is_the_catalogs_file_name_pattern():
    from neuron_env.matrix import catalog
    from neuron_env.matrix.model import release_ok

    for name in ("2.33", "2.31.1", "2.33rc1"):
        assert release_ok(name) and catalog._FILE.fullmatch(f"neuron-{name}.toml")
    for name in ("2.99\n", " 2.99", "1!2.99", "v2.99", ""):
        assert not release_ok(name) and not catalog._FILE.fullmatch(f"neuron-{name}.toml")


# -- finding 1: `trial --collect` never follows a link in RUN_DIR, never shows its target ------
def _run_dir(tmp_path):
    from tests.unit.test_trial_collect import make_run

    return make_run(tmp_path)


def _collect(run):
    from neuron_env.trial import distributed as dist

    d = dist.DistOptions(world_size=2)
    return dist.verdict(dist.collect(str(run), d), d, 60.0, "gloo")


def test_links_planted_in_run_dir_are_never_followed_nor_shown(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:SECRET-HASH:19000:0:99999:7:::\n")
    run = _run_dir(tmp_path)
    (run / "rank1.json").unlink()  # another user swapped the rank's files for links
    (run / "rank1.steps").unlink()
    (run / "rank1.error").symlink_to(secret)
    (run / "rank1.steps").symlink_to(secret)
    res = _collect(run)
    text = json.dumps({"summary": res.summary, "details": res.details}, default=str)
    assert "SECRET-HASH" not in text and res.status == "fail", text[:2000]


def test_a_rank_json_that_is_a_link_is_refused_naming_the_link_only(tmp_path):
    from neuron_env.errors import BadInput

    secret = tmp_path / "secret.json"
    secret.write_text('{"SECRET": 1}')
    run = _run_dir(tmp_path)
    (run / "rank1.json").unlink()
    (run / "rank1.json").symlink_to(secret)
    with pytest.raises(BadInput, match="symbolic link") as e:
        _collect(run)
    assert "SECRET" not in str(e.value)


@pytest.mark.parametrize("mode", [0o777, 0o775])
def test_a_run_dir_others_can_write_is_refused(tmp_path, mode):
    from neuron_env.errors import EXIT_CONFIG, BadInput

    run = _run_dir(tmp_path)
    run.chmod(mode)
    with pytest.raises(BadInput, match="not trusted") as e:
        _collect(run)
    assert e.value.exit_code == EXIT_CONFIG


def test_a_run_dir_that_is_a_link_is_refused(tmp_path):
    from neuron_env.errors import BadInput

    run = _run_dir(tmp_path)
    (tmp_path / "alias").symlink_to(run)
    with pytest.raises(BadInput, match="symbolic link"):
        _collect(tmp_path / "alias")


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_another_users_file_in_run_dir_is_not_read(tmp_path):
    run = _run_dir(tmp_path)
    (run / "rank1.error").write_text("FORGED by uid 4242\n")
    os.chown(run / "rank1.error", 4242, 4242)
    res = _collect(run)
    assert "FORGED" not in json.dumps({"s": res.summary, "d": res.details}, default=str)


# -- the invariants reach inside/ and backend/src: one opener for the run directory ------------
PATH_LOADS = {  # torch.load given a path (not a file our opener opened), and why that is fine
    "neuron_env/inside/_trial_baseline.py": "`--baseline FILE`, a path the user names, checked "
                                            "by guards/files.check_regular before the target runs",
}


def test_inside_scripts_and_the_emulator_load_run_directory_files_through_the_opener():
    """torch.load(PATH) follows links; in the code neuron-env runs in other processes a
    tensor file of a shared directory is opened by inside/_shared.open_read and handed over
    as a file object (trial_dist.py's reference.pt). Only the listed sites load by path."""
    import ast
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    found = {}
    for tree in ("neuron_env/inside", "backend/src"):
        for path in sorted((repo / tree).rglob("*.py")):
            rel = path.relative_to(repo).as_posix()
            calls = [n.lineno for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                     and n.func.attr == "load" and ast.unparse(n.func.value).endswith("torch")
                     and n.args and not (isinstance(n.args[0], ast.Name)
                                         and n.args[0].id in ("f", "fh", "buf"))]
            if calls and rel not in PATH_LOADS:
                found[rel] = calls
    assert not found, f"torch.load of a path outside the opener: {found}"
    assert "open_read" in (repo / "neuron_env/inside/trial_dist.py").read_text()
