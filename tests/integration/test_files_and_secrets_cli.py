"""Issue #25 through real processes: the CLI writing reports onto devices and links, bundle in a
hostile environment and a world-writable --out directory, a non-root doctor before a 0600
manifest, a venv killed during ensurepip, a read-only file system, masked sinks (SSM and tags
on moto's server, the scontrol command line), userdata refusing credentials and the first-boot
log's redact run on real strings."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import roots
from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.envs import make_venv, site_packages

pytestmark = pytest.mark.integration
# neuron-env is not on the public index: every rendering names its source (#44)
SRC_ARGS = ("--source", "neuron-env==0.1.0", "--source-index-url",
            "https://pypi.internal.example.com/simple")

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root: mknod, chown, runuser, mount")
OTHER = 65534  # nobody
SCHEMAS = REPO / "neuron_env" / "schemas"


# -- 1. --report onto a device, /dev/stdout, a link ------------------------------------------
def test_doctor_report_onto_a_device_or_a_link_to_one_is_refused_stdout_still_works(tmp_path):
    """Issue #36: one writer refuses devices, FIFOs and links (it wrote through them before);
    the names of our own descriptors (/dev/stdout) are still written to."""
    link = tmp_path / "out.json"
    link.symlink_to("/dev/null")
    root = roots.trn2_host(tmp_path / "r")
    for spec in (f"json:{link}", "json:/dev/null"):
        p = run_cli("doctor", "--root", str(root), "--only", "os", "--report", spec)
        assert p.returncode == 2 and ("symbolic link" in p.stderr or "is a device" in p.stderr), \
            p.stderr
    assert link.is_symlink() and stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    p = run_cli("doctor", "--root", str(root), "--only", "os", "--format", "json",
                "--report", "junit:/dev/stdout")
    assert p.returncode in (0, 1), p.stderr
    assert "<testsuite" in p.stdout


@needs_root
def test_doctor_report_through_a_link_to_another_owners_file_is_refused(tmp_path):
    theirs = tmp_path / "theirs.prom"
    theirs.write_text("THEIRS\n")
    os.chown(theirs, OTHER, OTHER)
    link = tmp_path / "neuron.prom"
    link.symlink_to(theirs)
    root = roots.trn2_host(tmp_path / "r")
    p = run_cli("doctor", "--root", str(root), "--only", "os", "--report",
                f"prometheus:{link}")
    assert p.returncode == 2 and "symbolic link" in p.stderr, p.stderr
    assert theirs.read_text() == "THEIRS\n" and link.is_symlink()


def test_prometheus_report_is_0644_under_umask_077(tmp_path):
    out = tmp_path / "neuron.prom"
    root = roots.trn2_host(tmp_path / "r")
    subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root", str(root), "--only",
                    "os", "--report", f"prometheus:{out}"], capture_output=True, env=cli_env(),
                   cwd=REPO, timeout=60, preexec_fn=lambda: os.umask(0o077))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644


# -- 2, 3. bundle in a hostile environment, --out in a world-writable directory ---------------
@needs_root
def test_bundle_leaves_out_links_and_foreign_files_and_ignores_a_planted_temp(tmp_path):
    secret = tmp_path / "root-secret"
    secret.write_text("ROOT-ONLY-SECRET\n")
    secret.chmod(0o600)
    py = make_venv(tmp_path / "v")
    state = py.parent.parent / ".neuron-env"
    (state / "logs").mkdir(parents=True)
    (state / "logs" / "install-1.log").write_text("fine\n")
    (state / "logs" / "install-2.log").symlink_to(secret)
    (state / "install-manifest.json").symlink_to(secret)
    foreign = state / "logs" / "install-3.log"
    foreign.write_text("FOREIGN\n")
    os.chown(foreign, OTHER, OTHER)
    out_dir = tmp_path / "shared"
    out_dir.mkdir()
    out_dir.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.write_text("KEEP\n")
    (out_dir / ".case.tar.gz.tmp").symlink_to(victim)  # the old fixed temporary name
    out = out_dir / "case.tar.gz"
    p = run_cli("bundle", "--out", str(out), "--python", str(py), "--root",
                str(roots.trn2_host(tmp_path / "r")), "--format", "json", timeout=120)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "KEEP\n"
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "bundle.schema.json").read_text()))
    with tarfile.open(out) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames()]
        text = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert b"ROOT-ONLY-SECRET" not in text and b"FOREIGN" not in text
    assert "neuron-env/install-1.log" in names
    left = {Path(x["path"]).name: x["reason"] for x in doc["left_out"]}
    assert "symbolic link" in left["install-2.log"] and "symbolic link" in left[
        "install-manifest.json"] and "uid 65534" in left["install-3.log"]
    assert "left out" in p.stderr


# -- 7. a non-root doctor before root's manifest ----------------------------------------------
def _world_readable_tmp() -> Path:
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="neuron-env-test-", dir="/tmp"))
    d.chmod(0o755)
    return d


@needs_root
def test_unreadable_manifest_is_a_warning_for_a_non_root_doctor(tmp_path):
    import shutil

    if shutil.which("runuser") is None:
        pytest.skip("runuser is not installed")
    base = "/usr/bin/python3"
    if not os.path.exists(base):
        pytest.skip("no system python3 that another user may run")
    d = _world_readable_tmp()
    try:
        py = make_venv(d / "v", base)
        sp = site_packages(py)
        info = sp / "torch_neuronx-2.14.3.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-neuronx\n"
                                       "Version: 2.14.3.0.1\n")
        state = py.parent.parent / ".neuron-env"
        state.mkdir()
        man = state / "install-manifest.json"
        man.write_text(json.dumps({"schema": "neuron-env.manifest/1", "status": "incomplete",
                                   "packages": []}))
        man.chmod(0o600)
        root = roots.trn2_host(d / "r")
        for p in d.rglob("*"):
            if not p.is_symlink() and p != man:
                p.chmod(p.stat().st_mode | 0o755 if p.is_dir() else p.stat().st_mode | 0o644)
        here = sys.version_info[:2]
        ours = subprocess.run([base, "-c", "import sys; print(sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
        if ours != str(tuple(here)):
            pytest.skip(f"system python {ours} is not this test's {here}")
        lib = Path(sys.prefix) / "lib" / f"python{here[0]}.{here[1]}" / "site-packages"
        pypath = f"{REPO}:{lib}"
        env = cli_env(PYTHONPATH=pypath, HOME=str(d), NEURON_ENV_NO_CACHE="1")
        r = subprocess.run(["runuser", "-u", "nobody", "--", base, "-m", "neuron_env", "doctor",
                            "--root", str(root), "--python", str(py), "--only",
                            "backend.origin", "--format", "json"], capture_output=True,
                           text=True, env=env, timeout=120, cwd=str(d))
        if "Permission denied" in r.stderr and not r.stdout:
            pytest.skip(f"nobody cannot run neuron-env here: {r.stderr[-300:]}")
        res = {x["id"]: x for x in json.loads(r.stdout)["results"]}
        origin = res["backend.origin"]
        assert origin["status"] in ("warn", "fail"), origin
        assert "cannot be read" in json.dumps(origin), origin
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_manifest_is_0644_under_umask_077(tmp_path):
    from neuron_env.install import manifest

    old = os.umask(0o077)
    try:
        path = manifest.write(str(tmp_path), {"schema": manifest.SCHEMA, "status": "complete"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


# -- 8. a venv killed during ensurepip is never mistaken for a good one ------------------------
def _ensurepip_running(under: Path) -> bool:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"ensurepip" in cmd and str(under).encode() in cmd:
                return True
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_venv_interrupted_during_ensurepip_is_made_again(tmp_path, sig):
    from neuron_env.install import venv

    d = tmp_path / "new-venv"
    code = ("import sys; from pathlib import Path; from neuron_env.install import venv; "
            "venv.create(Path(sys.argv[1]), sys.argv[2])")
    child = subprocess.Popen([sys.executable, "-c", code, str(d), sys.executable], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not _ensurepip_running(d):
        assert child.poll() is None and time.monotonic() < deadline, "ensurepip never ran"
        time.sleep(0.02)
    child.send_signal(sig)
    child.wait(timeout=30)
    time.sleep(0.5)  # PDEATHSIG/group kill: ensurepip goes with it
    assert venv.existing(d) is None, "a venv without pip taken for a good one"
    py = venv.create(d, sys.executable)
    assert subprocess.run([py, "-m", "pip", "--version"], capture_output=True,
                          timeout=60).returncode == 0


# -- 27. install --venv on a read-only file system ---------------------------------------------
@needs_root
def test_venv_on_a_read_only_file_system_says_so(tmp_path):
    from neuron_env.errors import InterpreterError
    from neuron_env.install import venv

    mnt = tmp_path / "ro"
    mnt.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True, timeout=30)
    if m.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {m.stderr.strip()}")
    try:
        with pytest.raises(InterpreterError) as e:
            venv.create(mnt / "new", sys.executable)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)
    text = e.value.render()
    assert "read-only file system" in text and "python3-venv" not in text, text


# -- 11. --matrix URL ------------------------------------------------------------------------------
def test_matrix_url_with_a_token_is_masked_everywhere():
    p = run_cli("doctor", "--matrix", "https://user:TOKEN1234@host/m.toml", "--format", "json")
    assert p.returncode == 2 and "TOKEN1234" not in p.stdout + p.stderr, p.stdout + p.stderr
    p = run_cli("doctor", "--matrix", "https://user:TOKEN1234@host/m.toml", "--format", "nhc")
    assert "TOKEN1234" not in p.stdout + p.stderr


# -- 12. every sink masked: SSM, tags, the scontrol command line -------------------------------
def test_ssm_parameter_and_tags_are_masked(moto_url, monkeypatch):
    from neuron_env.aws import publish
    from neuron_env.report.model import Report, Result
    from tests.helpers.aws import aws_env, boto

    for k, v in aws_env(moto_url).items():
        if k.startswith("AWS_"):
            monkeypatch.setenv(k, v)
    iid = "i-0bbbbbbbbbbbbbbb2"
    url = "https://ci:pa/ss%20T0KEN@mirror.example/simple"
    rep = Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"},
                 {"release": url}, {"instance": {"instance_id": iid, "type": "trn2.48xlarge"}},
                 (Result("backend.origin", "backend", "fail", f"torch-neuronx came from {url}"),),
                 1)
    out = publish.publish(rep, True, "/neuron-env/masked", False)
    assert all(r.status == "pass" for r in out), out
    value = boto("ssm", moto_url).get_parameter(Name="/neuron-env/masked")["Parameter"]["Value"]
    tags = boto("ec2", moto_url).describe_tags(
        Filters=[{"Name": "resource-id", "Values": [iid]}])["Tags"]
    shown = value + json.dumps(tags)
    assert "T0KEN" not in shown and "pa/ss" not in shown and "***@mirror.example" in shown


def test_slurm_drain_reason_is_masked_on_the_command_line(tmp_path, monkeypatch):
    from neuron_env.fleet import slurm
    from neuron_env.report.model import Report, Result

    argv_log = tmp_path / "scontrol.argv"
    fake = tmp_path / "bin" / "scontrol"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> {argv_log}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    token = "Z" * 90
    rep = Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"}, None, {},
                 (Result("backend.origin", "backend", "fail",
                         f"{'w' * 60} https://ci:{token}@mirror/simple"),), 1)
    slurm.drain_or_resume(rep)
    args = argv_log.read_text()
    assert "state=drain" in args and "ZZZZ" not in args, args


# -- 13. userdata / imagebuilder-component with credentials ------------------------------------
@pytest.mark.parametrize("cmd", ["userdata", "imagebuilder-component"])
def test_credentialed_index_url_is_refused_with_the_safer_way(cmd):
    p = run_cli(cmd, "--neuron-index-url", "https://ci:pa/ss@mirror.example/simple")
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert "--neuron-index-url-from ssm:/" in p.stderr and "pa/ss" not in p.stderr


def test_the_safer_way_renders_a_script_bash_accepts(tmp_path):
    p = run_cli("userdata", *SRC_ARGS, "--neuron-index-url-from", "ssm:/neuron/index-url")
    assert p.returncode == 0, p.stderr
    script = tmp_path / "ud.sh"
    script.write_text(p.stdout)
    assert subprocess.run(["bash", "-n", str(script)], timeout=30).returncode == 0


# -- 10. the first-boot log's redact, run on real strings ---------------------------------------
@pytest.mark.parametrize("line,secret", [
    ("pip: https://ci:pa/ss@mirror.example/simple failed", "pa/ss"),
    ("pip: https://ci:pa ss@mirror.example/simple failed", "pa ss"),
    ("pip: https://ci:p@ss@mirror.example/simple failed", "p@ss"),
    ("index http://aws:tok=@10.0.0.1:8080/pypi", "tok="),
])
def test_first_boot_log_redact_masks_real_strings(tmp_path, line, secret):
    p = run_cli("userdata", *SRC_ARGS, "--neuron-index-url-from", "ssm:/neuron/index-url")
    body = p.stdout
    start = body.index("redact() {")
    func = body[start:body.index("\n}\n", start) + 3]
    r = subprocess.run(["bash", "-c", func + '\nprintf "%s\\n" "$1" | redact', "_", line],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and secret not in r.stdout and "***@" in r.stdout, r.stdout


def test_first_boot_log_redact_masks_the_known_index_url_literally(tmp_path):
    p = run_cli("userdata", *SRC_ARGS, "--neuron-index-url-from", "ssm:/neuron/index-url")
    body = p.stdout
    start = body.index("redact() {")
    func = body[start:body.index("\n}\n", start) + 3]
    url = "https://ci:a@b/c d@mirror.example/simple"
    r = subprocess.run(["bash", "-c", func + '\nprintf "%s\\n" "got $NEURON_ENV_NEURON_INDEX_URL"'
                        " | redact"], capture_output=True, text=True, timeout=30,
                       env={**os.environ, "NEURON_ENV_NEURON_INDEX_URL": url})
    assert "a@b/c d" not in r.stdout and "***@mirror.example/simple" in r.stdout, r.stdout
