"""The stack checks end to end: fixture roots, a fake neuron-ls / neuronx-cc / fi_info on PATH,
real /proc for core holders, the CLI's JSON against its schemas; matrix sources and trn2n."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from neuron_env.matrix import catalog
from neuron_env.probes.cache import probe_cache
from neuron_env.probes.container import probe_container
from neuron_env.probes.efa import probe_efa
from neuron_env.probes.holders import probe_holders
from neuron_env.probes.host import make_root
from neuron_env.probes.neuron_ls import probe_neuron_ls
from neuron_env.probes.tools import image_path, probe_tools
from tests.helpers import roots
from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.servers import IMDS

pytestmark = pytest.mark.integration
M = catalog.select("2.33")
SCHEMAS = REPO / "neuron_env/schemas"


def schema(name):
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def fake_neuron_ls(bin_dir: Path, procs: list[dict], devices: int = 16) -> Path:
    """A neuron-ls that answers `-j` and `--output-format json` alike."""
    data = [{"neuron_device": i, "bdf": f"{i:02x}:00.0", "nc_count": 4,
             "logical_neuroncore_config": 2, "memory_size": 103079215104,
             "neuroncore_ids": list(range(4 * i, 4 * i + 4)),
             "neuron_processes": procs if i == 0 else []} for i in range(devices)]
    return roots.add_executable(bin_dir / "neuron-ls",
                                f"cat <<'EOF'\n{json.dumps(data)}\nEOF\n")


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- probes under fixture roots ---------------------------------------------------------------
def test_container_probe_docker_k8s_and_host(tmp_path):
    host = roots.trn2_host(tmp_path / "h")
    assert not probe_container(make_root(str(host))).in_container
    d = roots.make_container(roots.trn2_host(tmp_path / "d"))
    c = probe_container(make_root(str(d)))
    assert c.in_container and c.kind == "docker" and "/.dockerenv" in c.evidence
    k = roots.make_container(roots.make_root(tmp_path / "k"), kind="kubernetes")
    c = probe_container(make_root(str(k)))
    assert c.kind == "kubernetes" and any("kubepods" in e for e in c.evidence)


def test_efa_and_tools_probes_read_the_root(tmp_path):
    r = roots.trn2_host(tmp_path / "r")
    root = make_root(str(r))
    e = probe_efa(root)
    assert e.ib_devices == ("rdmap0s0",) and e.uverbs == ("uverbs0",) and e.fi_info_path is None
    path = image_path(root)
    assert path.endswith("/opt/aws/neuron/bin")  # from etc/profile.d/neuron.sh
    t = probe_tools(root, path)
    assert t.on_path["neuron-ls"] == "/opt/aws/neuron/bin/neuron-ls"
    bare = roots.make_root(tmp_path / "b", packages=dict(roots.DPKG_NEURON_233))
    roots.add_neuron_tools(bare, on_path=False)
    t = probe_tools(make_root(str(bare)), image_path(make_root(str(bare))))
    assert t.on_path["neuron-ls"] is None and t.in_neuron_bin["neuron-ls"] is True


def test_cache_probe_writable_creatable_and_stale(tmp_path):
    r = roots.trn2_host(tmp_path / "r")
    cache = r / "var/cache/neff"
    (cache / "neuronxcc-2.15.141.0+d3cfc8ca").mkdir(parents=True)
    (cache / "neuronxcc-2.28.7631.0+aa").mkdir()
    dirs = {c.var: c for c in probe_cache(make_root(str(r)), {
        "TORCH_NEURONX_NEFF_CACHE_DIR": "/var/cache/neff"})}
    neff, debug = dirs["TORCH_NEURONX_NEFF_CACHE_DIR"], dirs["TORCH_NEURONX_DEBUG_DIR"]
    assert neff.exists and neff.writable and neff.from_env and neff.free_bytes > 0
    assert neff.compiler_versions == ("2.15.141.0", "2.28.7631.0")
    assert not debug.exists and debug.writable and debug.creatable_from == "/"
    assert neff.untrusted is None
    cache.chmod(0o777)  # guards.trust (issue #36): anyone may plant NEFFs there
    try:
        shared = probe_cache(make_root(str(r)), {"TORCH_NEURONX_NEFF_CACHE_DIR": "/var/cache/neff"})
        assert shared[1].untrusted == "writable by group or others (mode 777)"
    finally:
        cache.chmod(0o755)
    if os.geteuid() != 0:  # root can write anywhere: the read-only case needs a user
        cache.chmod(0o555)
        try:
            ro = probe_cache(make_root(str(r)), {"TORCH_NEURONX_NEFF_CACHE_DIR": "/var/cache/neff"})
            assert not ro[1].writable
        finally:
            cache.chmod(0o755)


# -- fake neuron-ls on PATH: the cores and their holders --------------------------------------
def test_stale_and_live_holders_from_a_fake_neuron_ls(tmp_path, monkeypatch):
    gone = dead_pid()
    fake_neuron_ls(tmp_path / "bin", [
        {"pid": gone, "command": "python train.py", "neuron_runtime_version": "2.35.30.0"},
        {"pid": os.getpid(), "command": "pytest", "neuron_runtime_version": "2.35.30.0"}])
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    nls = probe_neuron_ls()
    assert nls.error is None, nls.error
    holders = {h.pid: h for h in probe_holders(make_root(None), nls.devices)}
    assert holders[gone].alive is False and holders[os.getpid()].alive is True
    assert holders[gone].devices == (0,)


def test_doctor_names_the_stale_holder_and_the_missing_tools(tmp_path):
    """No --root: the real host, the type from a loopback IMDS, tools from a fake PATH."""
    bin_dir = tmp_path / "bin"
    gone = dead_pid()
    fake_neuron_ls(bin_dir, [{"pid": gone, "command": "python train.py",
                              "neuron_runtime_version": "2.35.30.0"}])
    roots.add_executable(bin_dir / "neuronx-cc", "echo 'NeuronX Compiler version 2.28'\n")
    with IMDS(instance_type="trn2.48xlarge") as srv:
        env = cli_env(AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=srv.url,
                      PATH=f"{bin_dir}{os.pathsep}/usr/bin:/bin",
                      NEURON_LOGICAL_NC_CONFIG="2")
        p = run_cli("doctor", "--format", "json", "--python", sys.executable, "--only",
                    "driver.cores,tools.path", env=env)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema("doctor"))
    res = {r["id"]: r for r in doc["results"]}
    if doc["target"]["instance"]["source"] != "imds":
        pytest.skip("this machine answers as an EC2 instance itself (DMI)")
    cores = res["driver.cores"]
    assert cores["status"] == "fail" and f"pid {gone} (python train.py)" in cores["summary"]
    tools = res["tools.path"]
    assert tools["status"] == "fail" and "neuron-top" in tools["summary"]
    assert tools["observed"]["on_path"]["neuronx-cc"] == f"{bin_dir}/neuronx-cc"
    assert p.returncode == 1


# -- doctor under fixture roots: each check passing and failing -------------------------------
@pytest.fixture(scope="module")
def py(tmp_path_factory):
    from tests.helpers.envs import GOOD_234, add_dist, make_venv, pyenv_python, site_packages

    exe = pyenv_python("3.12")
    if exe is None:
        pytest.skip("Python 3.12 is not installed here (pyenv)")
    venv = make_venv(tmp_path_factory.mktemp("s312") / "v", exe)
    for name, ver in GOOD_234.items():
        add_dist(site_packages(venv), name, ver)
    return str(venv)


def doctor(root, py, *args, env=None):
    p = run_cli("doctor", "--format", "json", "--root", str(root), "--python", py, *args,
                env=env)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema("doctor"))
    return {r["id"]: r for r in doc["results"]}, p


def test_healthy_233_root_passes_the_stack_checks(tmp_path, py):
    res, p = doctor(roots.trn2_host(tmp_path / "r"), py)
    for i in ("driver.versions", "driver.cores", "backend.lineage", "backend.collectives",
              "tools.path", "cache.compile", "net.efa"):
        assert res[i]["status"] == "pass", (i, res[i]["summary"])
    assert res["container.devices"]["status"] == "skip" and p.returncode == 0


@pytest.mark.parametrize("build, check, status, words", [
    (lambda r: roots.trn2_host(r, packages={**roots.DPKG_NEURON_233,
                                            "aws-neuron-dkms": "2.3.26.0"}),
     "driver.versions", "fail", "aws-neuron-dkms"),
    (lambda r: roots.trn2_host(r, packages=dict(roots.DPKG_NEURON)),
     "driver.versions", "fail", "the loaded neuron module is 2.31.7.0"),
    (lambda r: roots.trn2_host(r, tools=False), "tools.path", "fail", "not found"),
    (lambda r: roots.add_neuron_tools(roots.trn2_host(r, tools=False), on_path=False),
     "tools.path", "warn", "not on this PATH"),
    (lambda r: roots.trn2_host(r, efa=False), "net.efa", "warn", "single-node host does not"),
    (lambda r: roots.make_container(roots.trn2_host(r, efa=False)), "net.efa", "warn",
     "not passed in"),
    (lambda r: roots.make_container(roots.trn2_host(r, devices=0)), "container.devices", "fail",
     "no /dev/neuron*"),
    (lambda r: roots.make_container(roots.trn2_host(r, devices=4)), "container.devices", "pass",
     "4 Neuron device node(s)"),
    (lambda r: roots.trn2_host(r, packages={k: v for k, v in roots.DPKG_NEURON_233.items()
                                            if k != "aws-neuronx-collectives"}),
     "backend.collectives", "fail", "not installed"),
])
def test_doctor_under_roots(tmp_path, py, build, check, status, words):
    res, _ = doctor(build(tmp_path / "r"), py)
    assert res[check]["status"] == status and words in res[check]["summary"], res[check]


@pytest.mark.parametrize("args, env, status, words", [
    ((), {}, "warn", "EFA matters only across nodes"),
    (("--expect-efa",), {}, "fail", "multi-node intent: --expect-efa"),
    (("--expect-efa", "--no-expect-efa"), {}, "warn", "doctor --expect-efa makes this"),
    ((), {"SLURM_JOB_NUM_NODES": "4"}, "fail", "multi-node intent: SLURM_JOB_NUM_NODES=4"),
    ((), {"SLURM_JOB_NUM_NODES": "1"}, "warn", "single-node host"),
])
def test_missing_efa_fails_only_with_a_multi_node_intent(tmp_path, py, args, env, status,
                                                        words):
    """A trn2.48xlarge without EFA: single node is a warning (exit 0); --expect-efa or a Slurm
    job on several nodes fails it (exit 1)."""
    res, p = doctor(roots.trn2_host(tmp_path / "r", efa=False), py, *args, env=cli_env(**env))
    r = res["net.efa"]
    assert r["status"] == status and words in r["summary"], r
    assert p.returncode == (1 if status == "fail" else 0), p.stderr


def test_doctor_cache_dir_not_writable_fails(tmp_path, py):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    r = roots.trn2_host(tmp_path / "r")
    (r / "ro").mkdir(mode=0o555)
    res, _ = doctor(r, py, env=cli_env(TORCH_NEURONX_DEBUG_DIR="/ro/debug"))
    assert res["cache.compile"]["status"] == "fail"


# -- trn2n.48xlarge, instance, matrix sources -------------------------------------------------
def test_trn2n_instance_and_doctor_pass(tmp_path, py):
    p = run_cli("instance", "trn2n.48xlarge", "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema("instance"))
    assert p.returncode == 0 and doc["family"]["supported"] and not doc["warnings"]
    assert doc["matrix_facts"]["devices"] == 16 and doc["matrix_facts"]["lnc_default"] == 2
    assert doc["matrix_facts"]["source"].endswith("/tools/neuron-sys-tools/neuron-ls.html")
    res, p = doctor(roots.trn2_host(tmp_path / "n", instance="trn2n.48xlarge"), py)
    assert p.returncode == 0 and res["instance.type"]["status"] == "pass"
    assert res["driver.cores"]["status"] == "pass"
    # an image built on another type for trn2n (driver, tools, no devices here)
    res, p = doctor(roots.trn2_host(tmp_path / "b", instance="m7i.large", devices=0), py,
                    "--instance-type", "trn2n.48xlarge")
    assert p.returncode == 0 and res["instance.type"]["status"] == "pass"


def test_matrix_show_v_prints_sources_and_json_carries_them():
    text = run_cli("matrix", "show", "2.33", "-v").stdout
    assert "Sources" in text and "[gh-release-2.33]" in text
    assert "cited by: Ubuntu 22.04 (disputed: end-of-support)" in text
    assert "https://github.com/aws-neuron/torch-neuronx/releases/tag/v2.33.0" in text
    p = run_cli("matrix", "show", "2.33", "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["schema"] == "neuron-env.matrix/1"
    jsonschema.validate(doc["content"], json.loads((REPO / "matrices/schema.json").read_text()))
    assert {s["id"] for s in doc["content"]["sources"]} >= {"trn2-arch", "components-2.33"}
    xla = json.loads(run_cli("matrix", "show", "2.31.1", "--format", "json").stdout)
    assert xla["content"]["sources"][0]["id"] == "n2-manifest"


def test_a_matrix_without_sources_fails_validation(tmp_path):
    text = (REPO / "matrices/neuron-2.33.toml").read_text()
    f = tmp_path / "neuron-9.9.toml"
    f.write_text(text[:text.index("[[sources]]")].replace('release = "2.33"',
                                                         'release = "9.9"'))
    p = run_cli("matrix", "validate", str(f))
    assert p.returncode == 2 and "names no [[sources]]" in (p.stdout + p.stderr)


def test_doctor_cache_dir_that_cannot_be_created_fails(tmp_path, py):
    r = roots.trn2_host(tmp_path / "r")
    (r / "var/lib/neff").parent.mkdir(parents=True, exist_ok=True)
    (r / "var/lib/neff").write_text("a file where the cache directory should go")
    res, p = doctor(r, py, env=cli_env(TORCH_NEURONX_NEFF_CACHE_DIR="/var/lib/neff/cache"))
    c = res["cache.compile"]
    assert c["status"] == "fail" and "cannot be created under /var/lib/neff" in c["summary"]
    assert p.returncode == 1
