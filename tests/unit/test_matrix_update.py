"""matrix update, pure parts: pins, manifests, the never-worse plan, the user directory."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

from neuron_env.errors import ConfigurationError
from neuron_env.matrix import catalog
from neuron_env.matrix import update as upd
from neuron_env.matrix.loader import parse_text

REPO = Path(__file__).resolve().parents[2]
BASE = (REPO / "matrices" / "neuron-2.33.toml").read_text()


def toml(release: str, date: str = "2026-12-01") -> bytes:
    return BASE.replace('release = "2.33"', f'release = "{release}"', 1).replace(
        'date = "2026-10-19"', f'date = "{date}"', 1).encode()


def fetched(data: bytes, url: str = "https://x/m.toml") -> upd.Fetched:
    return upd.Fetched(url, data, hashlib.sha256(data).hexdigest())


def known(tmp_path: Path, *files: tuple[str, bytes, str]) -> list[catalog.Entry]:
    out = []
    for release, data, origin in files:
        d = tmp_path / origin
        d.mkdir(exist_ok=True)
        (d / f"neuron-{release}.toml").write_bytes(data)
        out += catalog.scan(d, bundled=origin == "bundled", origin=origin)
    return sorted(out, key=lambda e: e.version, reverse=True)


def load(e: catalog.Entry):
    return parse_text(e.path.read_text(), str(e.path))


def test_split_pin() -> None:
    h = "ab" * 32
    assert upd.split_pin(f"https://h/a.toml#sha256={h.upper()}") == ("https://h/a.toml", h)
    assert upd.split_pin("s3://b/k.json") == ("s3://b/k.json", None)
    for bad in ("https://h/a#md5=00", f"https://h/a#sha256={h[:-1]}"):
        with pytest.raises(ConfigurationError):
            upd.split_pin(bad)


def test_manifest_parse() -> None:
    h = "0" * 64
    good = b'{"schema": "neuron-env.matrix-manifest/1", "matrices": [{"url": "a", "sha256": "%s"}]}'
    assert upd._manifest("u", good % h.encode()) == [{"url": "a", "sha256": h}]
    assert upd._manifest("u", b"release = '2.34'\n") is None
    for bad in (b'{"schema": "other"}', b'{"schema": "neuron-env.matrix-manifest/1", '
                b'"matrices": [{"url": "a"}]}', b"{nope"):
        with pytest.raises(ConfigurationError):
            upd._manifest("u", bad)


def test_manifest_schema_agrees_with_the_reader() -> None:
    """neuron_env/schemas/matrix-manifest.schema.json accepts what _manifest accepts and
    refuses what it refuses."""
    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "neuron_env/schemas/matrix-manifest.schema.json").read_text())
    ok = {"schema": upd.MANIFEST_SCHEMA, "matrices": [{"url": "a", "sha256": "ab" * 32}]}
    jsonschema.validate(ok, schema)
    assert upd._manifest("u", json.dumps(ok).encode())
    bad_docs = [{"schema": "other", "matrices": ok["matrices"]},
                {"schema": upd.MANIFEST_SCHEMA, "matrices": []},
                {"schema": upd.MANIFEST_SCHEMA, "matrices": [{"url": "a"}]},
                {"schema": upd.MANIFEST_SCHEMA, "matrices": [{"url": "a", "sha256": "0" * 63}]},
                {"schema": upd.MANIFEST_SCHEMA, "matrices": [{"url": "", "sha256": "0" * 64}]}]
    for bad in bad_docs:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(ConfigurationError):
            upd._manifest("u", json.dumps(bad).encode())


def test_plan_never_worse(tmp_path: Path) -> None:
    have = known(tmp_path, ("2.33", BASE.encode(), "bundled"), ("2.34", toml("2.34"), "user"))
    target = tmp_path / "user"
    cases = {
        toml("2.35"): ("install", "new release"),
        toml("2.34"): ("unchanged", "same digest"),
        toml("2.34", "2026-12-20"): ("replace", "newer revision"),
        toml("2.34", "2026-11-01"): ("refused", "older revision"),
        toml("2.33", "2026-10-20"): ("install", "shadows the bundled Neuron 2.33"),
        toml("2.33", "2026-10-01"): ("refused", "older revision"),
        toml("2.30.9"): ("refused", "older than the newest known"),
        b"release = 1\n": ("refused", "fails matrix validate"),
        b"\xff\xfe": ("refused", "not UTF-8"),
    }
    for data, (action, why) in cases.items():
        [d] = upd.plan([fetched(data)], target, have, load)
        assert (d.action, why in d.reason) == (action, True), (data[:40], d)
    [d] = upd.plan([fetched(toml("2.30.9"))], target, have, load, allow_older=True)
    assert d.action == "install" and d.path == str(target / "neuron-2.30.9.toml")
    twice = upd.plan([fetched(toml("2.36")), fetched(toml("2.36", "2027-01-01"))], target,
                     have, load)
    assert [d.action for d in twice] == ["install", "refused"]


def test_apply_is_all_or_nothing(tmp_path: Path) -> None:
    ok = upd.Decision("u", "2.35", "0" * 64, str(tmp_path / "neuron-2.35.toml"), "install",
                      "", "x")
    bad = upd.Decision("v", "", "0" * 64, "", "refused", "fails matrix validate")
    assert upd.apply([ok, bad]) == 2 and not (tmp_path / "neuron-2.35.toml").exists()
    assert upd.apply([ok], dry_run=True) == 0 and not (tmp_path / "neuron-2.35.toml").exists()
    assert upd.apply([ok]) == 0 and (tmp_path / "neuron-2.35.toml").read_text() == "x"


def test_user_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NEURON_ENV_MATRIX_DIR", str(tmp_path / "m"))
    assert catalog.user_dir() == tmp_path / "m"
    monkeypatch.delenv("NEURON_ENV_MATRIX_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert catalog.user_dir() == tmp_path / "data" / "neuron-env" / "matrices"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert catalog.user_dir() == tmp_path / "home" / ".local/share/neuron-env/matrices"


def test_user_dir_takes_part_in_the_default(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    (tmp_path / "neuron-2.34.toml").write_bytes(toml("2.34"))
    (tmp_path / "neuron-2.33.toml").write_bytes(toml("2.33", "2026-10-25"))
    monkeypatch.setenv("NEURON_ENV_MATRIX_DIR", str(tmp_path))
    monkeypatch.delenv("NEURON_ENV_MATRIX", raising=False)
    entries = catalog.available()
    assert [(e.release, e.origin) for e in entries[:2]] == [("2.34", "user"), ("2.33", "user")]
    m = catalog.select()
    assert m.release == "2.34"
    p = catalog.provenance(m)
    assert p["origin"] == "user" and p["date"] == "2026-12-01"
    assert p["sha256"] == hashlib.sha256(toml("2.34")).hexdigest()
    assert catalog.provenance(catalog.select("2.31"))["origin"] == "bundled"
