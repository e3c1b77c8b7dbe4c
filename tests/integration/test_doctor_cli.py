"""`neuron-env doctor` end to end: fixture roots, real venvs, real subprocesses, every format."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from neuron_env.checks import all_ids
from tests.helpers import roots
from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.envs import GOOD_214, GOOD_234, PLACEHOLDER_INIT, add_dist, pyenv_python
from tests.helpers.servers import IMDS

pytestmark = pytest.mark.integration
DOCTOR_SCHEMA = json.loads((REPO / "neuron_env/schemas/doctor.schema.json").read_text())


def doctor_json(*args, env=None):
    p = run_cli("doctor", "--format", "json", *args, env=env)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, DOCTOR_SCHEMA)
    assert doc["exit_code"] == p.returncode, p.stderr
    return doc, p


def by_id(doc):
    return {r["id"]: r for r in doc["results"]}


@pytest.fixture(scope="module")
def py312_env(tmp_path_factory):
    """A real Python 3.12 venv holding metadata of Neuron 2.34's 2.14 pair (3.11 if 3.12 is
    absent)."""
    from tests.helpers.envs import make_venv, site_packages

    exe = pyenv_python("3.12")
    if exe is None:
        pytest.skip("Python 3.12 is not installed here (pyenv): the healthy target needs it")
    py = make_venv(tmp_path_factory.mktemp("t312") / "v", exe)
    site = site_packages(py)
    for name, ver in GOOD_234.items():
        add_dist(site, name, ver)
    return str(py)


def test_healthy_trn2_image_passes(tmp_path, py312_env):
    root = roots.trn2_host(tmp_path / "r")
    doc, p = doctor_json("--root", str(root), "--python", py312_env)
    res = by_id(doc)
    assert p.returncode == 0, {k: v["summary"] for k, v in res.items() if v["status"] != "pass"}
    assert doc["summary"]["fail"] == 0 and doc["matrix"]["release"] == "2.34"
    assert doc["target"]["instance"] == {"type": "trn2.48xlarge", "source": "dmi",
                                         "assumed": False, "is_ec2": True,
                                         "instance_id": "i-0123456789abcdef0", "notes": []}
    assert doc["target"]["packages"]["torch-neuronx"] == "2.14.3.1.1802"
    assert by_id(doc)["backend.pairing"]["status"] == "pass"
    assert doc["target"]["neuron_ls"] is None  # under --root the real host is not asked


def test_a_233_build_warns_against_234_and_passes_against_233(tmp_path, py312_env):
    """Neuron 2.33's torch-neuronx 2.14.3.0 under the default (2.34) matrix: a warning naming
    the release that built it and the upgrade line; checked with --matrix 2.33 it passes."""
    from tests.helpers.envs import make_venv, site_packages

    py = make_venv(tmp_path / "v233", pyenv_python("3.12") or sys.executable)
    for name, ver in GOOD_214.items():
        add_dist(site_packages(py), name, ver)
    root = roots.trn2_host(tmp_path / "r")
    doc, p = doctor_json("--root", str(root), "--python", str(py), "--only", "backend")
    r = by_id(doc)["backend.pairing"]
    assert p.returncode == 0 and r["status"] == "warn", r
    assert "Neuron 2.33's build" in r["summary"] and "==2.14.3.1.*" in r["summary"]
    assert r["fix_command"] == f"neuron-env install --python {py} --torch 2.14"
    assert by_id(doc)["backend.lineage"]["status"] == "pass"
    doc, p = doctor_json("--root", str(root), "--python", str(py), "--only", "backend",
                         "--matrix", "2.33")
    assert by_id(doc)["backend.pairing"]["status"] == "pass" and p.returncode == 0


def test_text_report_groups_marks_and_summary(tmp_path, py312_env):
    root = roots.trn2_host(tmp_path / "r", os="debian-12")
    p = run_cli("doctor", "--root", str(root), "--python", py312_env)
    assert p.returncode == 1
    out = p.stdout
    assert "[✗] Operating system" in out and "[✓] Instance" in out
    assert "✗ Debian GNU/Linux 12 (bookworm) is not supported by Neuron 2.34  (os.release)" in out
    from neuron_env.checks.fixes import os_targets
    from neuron_env.matrix import catalog

    assert f"move to {os_targets(catalog.select(None))[0].label} (" in out
    assert "\033[" not in out  # not a TTY: no colour
    assert out.rstrip().splitlines()[-1].startswith("FAILED: ")
    v = run_cli("doctor", "--root", str(root), "--python", py312_env, "-v").stdout
    assert "observed: type=trn2.48xlarge" in v


@pytest.mark.parametrize("kw, check, status", [
    ({"instance": "trn1.32xlarge"}, "instance.type", "fail"),
    ({"instance": "trn3.48xlarge"}, "instance.type", "pass"),
    ({"os": "debian-12"}, "os.release", "fail"),
    ({"os": "amzn-2023"}, "os.release", "fail"),
    ({"devices": 0}, "driver.devices", "fail"),
    ({"driver": None}, "driver.module", "fail"),
    ({"arch": 0xB7}, "os.arch", "fail"),
])
def test_host_variants(tmp_path, py312_env, kw, check, status):
    root = roots.trn2_host(tmp_path / "r", **kw)
    doc, p = doctor_json("--root", str(root), "--python", py312_env)
    assert by_id(doc)[check]["status"] == status, by_id(doc)[check]
    assert p.returncode == (0 if status == "pass" else 1) or check == "instance.type"


def test_non_ec2_host_has_unknown_instance(tmp_path, py312_env):
    root = roots.make_root(tmp_path / "r", vendor="QEMU", instance="Standard PC")
    doc, _ = doctor_json("--root", str(root), "--python", py312_env)
    r = by_id(doc)
    assert r["instance.type"]["status"] == "warn"
    assert "not 'Amazon EC2'" in r["instance.type"]["summary"]


def test_target_pythons_311_and_313(tmp_path, venv_factory):
    root = roots.trn2_host(tmp_path / "r")
    py, site = venv_factory(sys.executable, "v311")
    for n, v in GOOD_214.items():
        add_dist(site, n, v)
    r = by_id(doctor_json("--root", str(root), "--python", str(py))[0])
    assert r["python.version"]["status"] == "fail" and "3.11" in r["python.version"]["summary"]
    exe = pyenv_python("3.13")
    if exe is None:
        pytest.skip("Python 3.13 is not installed here (pyenv)")
    py, site = venv_factory(exe, "v313")
    for n, v in dict(GOOD_214, torch="2.13.0").items():
        add_dist(site, n, v)
    r = by_id(doctor_json("--root", str(root), "--python", str(py))[0])
    assert r["python.version"]["status"] == "pass"
    assert r["backend.pairing"]["status"] == "fail"
    assert r["backend.pairing"]["fix"].endswith("--torch 2.14")


def test_placeholder_environment(tmp_path, venv_factory):
    root = roots.trn2_host(tmp_path / "r")
    exe = pyenv_python("3.12") or sys.executable
    py, site = venv_factory(exe)
    add_dist(site, "torch", "2.14.0")
    add_dist(site, "torch-neuronx", "1.0", files={"torch_neuronx/__init__.py": PLACEHOLDER_INIT})
    add_dist(site, "neuronx-cc", "1.0.post1")
    doc, p = doctor_json("--root", str(root), "--python", str(py))
    o = by_id(doc)["backend.origin"]
    assert p.returncode == 1 and o["status"] == "fail" and "PLACEHOLDER" in o["summary"]
    assert len(o["details"]["problems"]) == 2


def test_junit_and_reports_in_one_run(tmp_path, py312_env):
    root = roots.trn2_host(tmp_path / "r", instance="trn1.32xlarge")
    j, x = tmp_path / "out/d.json", tmp_path / "out/d.xml"
    p = run_cli("doctor", "--root", str(root), "--python", py312_env, "--format", "junit",
                "--report", f"json:{j}", "--report", f"junit:{x}")
    assert p.returncode == 1
    suite = ET.fromstring(p.stdout).find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert len(cases) == len(all_ids()) and suite.get("failures") == "1"
    assert cases["instance.type"].find("failure").get("message").startswith("trn1.32xlarge")
    assert cases["os.release"].find("failure") is None
    doc = json.loads(j.read_text())
    jsonschema.validate(doc, DOCTOR_SCHEMA)
    assert doc["exit_code"] == 1
    assert ET.parse(x).getroot().find("testsuite").get("tests") == str(len(all_ids()))


def test_strict_only_skip(tmp_path, py312_env):
    root = roots.trn2_host(tmp_path / "r", packages={"aws-neuronx-dkms": "2.30.2.0"},
                           driver="2.30.2.0")
    doc, p = doctor_json("--root", str(root), "--python", py312_env, "--only", "driver")
    assert [r["id"] for r in doc["results"]] == ["driver.module", "driver.packages",
                                                   "driver.devices", "driver.versions",
                                                   "driver.cores", "driver.states",
                                                   "driver.dkms"]
    assert p.returncode == 0 and by_id(doc)["driver.packages"]["status"] == "warn"
    _, p = doctor_json("--root", str(root), "--python", py312_env, "--only", "driver",
                       "--strict")
    assert p.returncode == 1
    doc, p = doctor_json("--root", str(root), "--python", py312_env, "--skip",
                         "driver.packages,backend")
    assert not any(r["id"].startswith("backend.") for r in doc["results"])
    assert p.returncode == 0


def test_assumed_instance_type_on_a_build_host(tmp_path, py312_env):
    build = roots.make_root(tmp_path / "r", os="ubuntu-26.04", instance="m7i.4xlarge",
                            packages=dict(roots.DPKG_NEURON))
    roots.add_neuron_tools(build)  # aws-neuronx-tools is installed: its files are there
    doc, p = doctor_json("--root", str(build), "--python", py312_env,
                         "--instance-type", "trn2.48xlarge")
    r = by_id(doc)
    assert r["instance.type"]["status"] == "pass" and "assumed" in r["instance.type"]["summary"]
    assert r["driver.devices"]["status"] == "skip" and p.returncode == 0


def test_imds_under_root_is_reported_as_the_running_host(tmp_path, py312_env):
    root = roots.make_root(tmp_path / "r", os="ubuntu-26.04", vendor=None)
    with IMDS(instance_type="trn2.3xlarge") as srv:
        env = cli_env(AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=srv.url)
        doc, _ = doctor_json("--root", str(root), "--python", py312_env, "--only", "instance",
                             env=env)
    inst = doc["target"]["instance"]
    assert inst["type"] == "trn2.3xlarge" and inst["source"] == "imds"
    assert any("RUNNING host" in n for n in inst["notes"])


def test_imds_hang_keeps_doctor_fast(tmp_path, py312_env):
    root = roots.make_root(tmp_path / "r", os="ubuntu-26.04", vendor=None)
    with IMDS("hang") as srv:
        env = cli_env(AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=srv.url)
        doc, _ = doctor_json("--root", str(root), "--python", py312_env, env=env)
    assert doc["elapsed_s"] < 3
    assert by_id(doc)["instance.type"]["status"] == "warn"


def test_imds_token_with_crlf_is_a_missing_answer_not_a_crash(tmp_path, py312_env):
    """A token holding CR LF (a header it would forge) only means the type comes from
    elsewhere: doctor does not crash (it did: exit 3, a traceback)."""
    root = roots.make_root(tmp_path / "r", os="ubuntu-26.04", vendor=None)
    with IMDS("crlf-token") as srv:
        env = cli_env(AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=srv.url)
        doc, _ = doctor_json("--root", str(root), "--python", py312_env, "--only", "instance",
                             env=env)
        assert all("X-Evil" not in str(h) for _, _, h in srv.requests)
    inst = doc["target"]["instance"]
    assert inst["type"] is None and any("token is not valid" in n for n in inst["notes"])
    assert by_id(doc)["instance.type"]["status"] == "warn"


# -- configuration errors: exit 2, JSON stays JSON -------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["--root", "/nonexistent-root"], "--root /nonexistent-root"),
    (["--matrix", "9.99"], "no such release"),
    (["--only", "bogus.check"], "unknown check id"),
    (["--report", "pdf:/tmp/x"], "FORMAT:PATH"),
])
def test_configuration_errors_exit_2(args, words):
    p = run_cli("doctor", "--format", "json", *args)
    assert p.returncode == 2, p.stderr
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, DOCTOR_SCHEMA)
    assert words in doc["error"]["message"] and doc["exit_code"] == 2
    assert "Traceback" not in p.stderr and words in p.stderr
    t = run_cli("doctor", *args)
    assert t.returncode == 2 and t.stdout == "" and "Traceback" not in t.stderr


def test_invalid_matrix_file_exits_2_with_location(tmp_path):
    bad = tmp_path / "neuron-2.99.toml"
    bad.write_text((REPO / "matrices/neuron-2.33.toml").read_text().replace(
        'torch = "2.13.0"', 'torch = "two"'))
    p = run_cli("doctor", "--matrix", str(bad))
    assert p.returncode == 2 and f"{bad}:" in p.stderr and "pairs[1].torch" in p.stderr


def test_report_path_unwritable(tmp_path, py312_env):
    (tmp_path / "file").write_text("")
    p = run_cli("doctor", "--python", py312_env, "--root", str(roots.trn2_host(tmp_path / "r")),
                "--report", f"json:{tmp_path}/file/sub/x.json")
    assert p.returncode == 2 and "cannot write" in p.stderr


def test_matrix_cli(tmp_path):
    p = run_cli("matrix", "show", "--format", "json")
    doc = json.loads(p.stdout)
    c = doc["content"]
    assert doc["schema"] == "neuron-env.matrix/1" and p.returncode == 0
    assert [x["torch"] for x in c["pairs"]] == ["2.14.0", "2.13.0"]
    assert c["python"]["requires"] == ">=3.12,<3.15"
    assert {o["version"] for o in c["os"] if o["status"] == "supported"
            and "disputed_status" not in o} == {"24.04", "26.04"}
    assert {"trn2", "trn3"} <= {f["family"] for f in c["instances"] if f["supported"]}
    schema = json.loads((REPO / "neuron_env/schemas/matrix.schema.json").read_text())
    schema["properties"]["content"] = json.loads((REPO / "matrices/schema.json").read_text())
    jsonschema.validate(doc, schema)
    ls = run_cli("matrix", "list").stdout
    assert "2.34" in ls.splitlines()[1] and "(default)" in ls.splitlines()[1]
    assert run_cli("matrix", "show", "2.31").stdout.startswith("Neuron 2.31.1 (ga, xla")
    good = REPO / "matrices/neuron-2.33.toml"
    (tmp_path / "e.toml").write_text("")
    v = run_cli("matrix", "validate", str(good), str(tmp_path / "e.toml"), str(tmp_path))
    assert v.returncode == 2 and "ok       " in v.stdout and "empty" in v.stdout
    assert run_cli("matrix", "validate", str(REPO / "matrices")).returncode == 0
    j = json.loads(run_cli("matrix", "show", "nope", "--format", "json").stdout)
    assert j["exit_code"] == 2 and j["error"]["code"] == "configuration"


def test_matrix_import_cli(tmp_path):
    manifest = REPO / "tests/fixtures/n2-manifest-2.31.json"  # AWS's manifest, 2.31.x only
    p = run_cli("matrix", "import", str(manifest), "--out", str(tmp_path), "--release", "2.31")
    assert p.returncode == 0 and "wrote 2 matrices" in p.stdout
    assert run_cli("matrix", "validate", str(tmp_path)).returncode == 0
    d = run_cli("doctor", "--matrix", str(tmp_path / "neuron-2.31.1.toml"), "--format", "json",
                "--only", "python")
    assert json.loads(d.stdout)["matrix"]["release"] == "2.31.1"
    bad = run_cli("matrix", "import", str(tmp_path / "neuron-2.31.1.toml"), "--out",
                  str(tmp_path / "x"))
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr


def test_version_and_module_entry():
    p = run_cli("--version")
    assert p.returncode == 0 and p.stdout.startswith("neuron-env 0.")


def test_mounted_image_judges_packages_not_devices(tmp_path, py312_env):
    image = roots.trn2_host(tmp_path / "img", live=False, devices=0, driver=None)
    doc, p = doctor_json("--root", str(image), "--python", py312_env)
    r = by_id(doc)
    assert r["driver.module"]["status"] == "pass" and "in the image" in \
        r["driver.module"]["summary"]
    assert r["driver.devices"]["status"] == "skip" and "mounted image" in \
        r["driver.devices"]["summary"]
    assert p.returncode == 0


def test_doctor_on_a_real_torch_venv_with_the_emulator(tmp_path, torch_python):
    root = roots.trn2_host(tmp_path / "r")
    doc, _ = doctor_json("--root", str(root), "--python", torch_python)
    r = by_id(doc)
    assert doc["target"]["packages"]["torch"].startswith("2.13.0")
    assert r["backend.torch"]["status"] == "pass"
    # a trn2 is judged by its hardware: an emulator left there fails (#45 finding 4)
    assert r["backend.emulator"]["status"] == "fail"
    assert r["backend.emulator"]["summary"].startswith("EMULATED backend neuron-emulator")
    assert "trn2.48xlarge" in r["backend.emulator"]["summary"]
    assert r["backend.pairing"]["status"] == "fail"  # no real torch-neuronx: never hidden
