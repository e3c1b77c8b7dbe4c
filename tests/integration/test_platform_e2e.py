"""The platform engineer's path, end to end (#44): each artefact neuron-env renders, run as its
engine runs it, on a healthy fixture host (it must pass) and a broken one (it must fail, naming
driver.versions):

- the EC2 Image Builder component: its phases with awstoe's semantics (each step's commands as
  one bash script, in order, maxAttempts, onFailure Abort/Continue/Ignore);
- the Packer template (scripts/packer/): its provisioners as shell, execute_command included,
  `sudo` a stub; file downloads copied;
- the user data: bash under a temporary prefix, the IMDS on loopback, `sudo`/`apt-get` stubs
  that record any call, neuron-env's wheel fetched over http://127.0.0.1 and checked by sha256;
- the Slurm HealthCheckProgram: run by a real slurmd (its near-empty environment);
- the node-problem-detector plugin: under a read-only bind mount of the fixture root (a private
  mount namespace), `chroot /host` mapped to `--root` of that mount.

Everything installs from local artefacts: neuron-env's wheel built from this checkout, its
dependencies re-packed (tests/helpers/wheelhouse.py), the stand-in Neuron/PyTorch indexes."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from neuron_env.bootstrap.userdata import BootstrapOptions, component, userdata
from tests.helpers import roots
from tests.helpers.cli import REPO
from tests.helpers.envs import GOOD_234, add_dist, make_venv, site_packages
from tests.helpers.indexes import PY312, needs312, pip_env
from tests.helpers.servers import IMDS
from tests.helpers.wheels import IndexServer, sha256

pytestmark = [pytest.mark.integration, pytest.mark.slow, needs312]
NEURON_ENV = str(Path(sys.executable).with_name("neuron-env"))
BROKEN = "2.19.64.0"  # a loaded module older than the installed dkms: driver.versions fails


# -- shared fixtures ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    base = tmp_path_factory.mktemp("hosts")
    return roots.trn2_host(base / "healthy"), roots.trn2_host(base / "broken", driver=BROKEN)


@pytest.fixture(scope="module")
def own_index(wheelhouse, tmp_path_factory) -> str:
    """A PEP 503 index (file://) of neuron-env's wheelhouse: the team's own index."""
    simple = tmp_path_factory.mktemp("own-index") / "simple"
    for whl in wheelhouse.glob("*.whl"):
        name = re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower()
        (simple / name).mkdir(parents=True, exist_ok=True)
        (simple / name / "index.html").write_text(
            f'<a href="{whl.as_uri()}#sha256={sha256(whl)}">{html.escape(whl.name)}</a>\n')
    return simple.as_uri()


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> Path:
    """sudo (runs its command, as root would) and apt-get (records the call, fails)."""
    d = tmp_path_factory.mktemp("stubs")
    roots.add_executable(d / "sudo", 'while [ "${1#-}" != "$1" ]; do shift; done\nexec "$@"\n')
    roots.add_executable(d / "apt-get", f'echo "apt-get $*" >> {d}/apt-get.calls\nexit 100\n')
    return d


def own_wheel(wheelhouse: Path) -> Path:
    return next(wheelhouse.glob("neuron_env-*.whl"))


def engine_env(idx, stubs: Path, **extra) -> dict:
    env = pip_env(idx, **extra)
    env["PATH"] = f"{stubs}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def doctor_report(path: Path) -> tuple[int, dict[str, str]]:
    doc = json.loads(path.read_text())
    return doc["exit_code"], {r["id"]: r["status"] for r in doc["results"]}


# -- awstoe, emulated ---------------------------------------------------------------------------
def awstoe_run(document: str, env: dict, cwd: Path,
               phases: tuple[str, ...] | None = None) -> list[tuple[str, str, int]]:
    """Run an Image Builder component as awstoe does: phases in order (`phases`: as
    `awstoe run --phases`), each step's commands as one bash script, retried up to
    maxAttempts; a failed step with onFailure Abort ends the document, Continue goes on (the
    step failed), Ignore goes on as if it passed. Returns (phase, step, exit code) per step."""
    doc = yaml.safe_load(document)
    assert doc["schemaVersion"] == 1.0
    ran = []
    for phase in doc["phases"]:
        if phases is not None and phase["name"] not in phases:
            continue
        for step in phase["steps"]:
            assert step["action"] == "ExecuteBash", step
            script = cwd / f"{phase['name']}-{step['name']}.sh"
            script.write_text("\n".join(step["inputs"]["commands"]) + "\n")
            for _ in range(step.get("maxAttempts", 1)):
                p = subprocess.run(["bash", str(script)], env=env, cwd=cwd, text=True,
                                   capture_output=True, timeout=min(step["timeoutSeconds"], 300))
                if p.returncode == 0:
                    break
            (cwd / f"{phase['name']}-{step['name']}.log").write_text(p.stdout + p.stderr)
            ran.append((phase["name"], step["name"], p.returncode))
            if p.returncode != 0 and step.get("onFailure", "Abort") == "Abort":
                return ran
    return ran


def test_image_builder_component_on_healthy_and_broken_hosts(hosts, idx, wheelhouse, stubs,
                                                              tmp_path):
    healthy, broken = hosts
    env = engine_env(idx, stubs)
    opts = dict(source=str(wheelhouse), tool_venv=str(tmp_path / "opt/neuron-env"),
                venv=str(tmp_path / "opt/neuron-venv"), python=PY312,
                log_dir=str(tmp_path / "log"), instance_type="trn2.48xlarge", smoke=False,
                neuron_index_url=idx["neuron"], pytorch_index_url=idx["pytorch"])

    def run(root: Path, phases=None) -> list[tuple[str, str, int]]:
        doc = component(BootstrapOptions(**opts, install_args=f"--root {root} --installer pip",
                                         doctor_args=f"--root {root}"))
        return awstoe_run(doc, env, tmp_path, phases)

    ran = run(healthy)
    logs = tmp_path / "log"
    assert ran == [("build", "InstallNeuronEnv", 0), ("build", "InstallBackend", 0),
                   ("validate", "Doctor", 0), ("test", "DoctorSmoke", 0)], \
        (ran, (tmp_path / "validate-Doctor.log").read_text()[-2000:])
    assert doctor_report(logs / "doctor-validate.json")[0] == 0
    assert (logs / "doctor-test.xml").is_file()
    # the image launched on a host whose driver is wrong: validate assumes the target type
    # (device checks wait for the instance), the test phase on the instance fails
    ran = run(broken, phases=("validate", "test"))
    assert ran == [("validate", "Doctor", 0), ("test", "DoctorSmoke", 1)], ran
    rc, results = doctor_report(logs / "doctor-test.json")
    assert rc == 1 and results["driver.versions"] == "fail"
    assert not (stubs / "apt-get.calls").exists()


def test_awstoe_emulation_honours_on_failure(tmp_path):
    """The emulation itself: Continue goes on after a failed step, Abort stops, retries count."""
    doc = {"name": "t", "schemaVersion": 1.0, "phases": [{"name": "build", "steps": [
        {"name": "a", "action": "ExecuteBash", "timeoutSeconds": 5, "onFailure": "Continue",
         "maxAttempts": 2, "inputs": {"commands": ["echo x >> tries", "exit 3"]}},
        {"name": "b", "action": "ExecuteBash", "timeoutSeconds": 5, "onFailure": "Abort",
         "inputs": {"commands": ["exit 4"]}},
        {"name": "c", "action": "ExecuteBash", "timeoutSeconds": 5,
         "inputs": {"commands": ["true"]}}]}]}
    ran = awstoe_run(yaml.safe_dump(doc), {"PATH": "/usr/bin:/bin"}, tmp_path)
    assert ran == [("build", "a", 3), ("build", "b", 4)]
    assert (tmp_path / "tries").read_text() == "x\nx\n"


# -- Packer, emulated ---------------------------------------------------------------------------
PACKER = REPO / "scripts/packer/neuron-env.pkr.hcl"


def _hcl_string(s: str, variables: dict[str, str]) -> str:
    """An HCL template string: JSON escapes, ${var.NAME} interpolated, $${ a literal ${."""
    text = json.loads(s)
    out = re.sub(r"(?<!\$)\$\{var\.([a-z0-9_]+)\}", lambda m: variables[m.group(1)], text)
    return out.replace("$${", "${")


def packer_variables(text: str, given: dict[str, str]) -> dict[str, str]:
    found = {}
    for m in re.finditer(r'variable "([a-z0-9_]+)" \{(.*?)\n\}', text, re.S):
        d = re.search(r'\n  default\s*=\s*("(?:[^"\\]|\\.)*")', m.group(2))
        found[m.group(1)] = json.loads(d.group(1)) if d else None
    unknown = set(given) - set(found)
    assert not unknown, f"not variables of the template: {unknown}"
    values = {**found, **given}
    missing = [k for k, v in values.items() if v is None]
    if missing:  # packer refuses to build without them
        raise ValueError(f"required variables not set: {missing}")
    return values


def packer_provisioners(text: str) -> list[dict]:
    build = text[text.index("\nbuild {"):]
    out = []
    for m in re.finditer(r'\n  provisioner "(\w+)" \{\n(.*?)\n  \}', build, re.S):
        body, p = m.group(2), {"type": m.group(1)}
        for key in ("execute_command", "direction", "source", "destination"):
            if (v := re.search(rf'\n?\s*{key}\s*=\s*("(?:[^"\\]|\\.)*")', body)):
                p[key] = v.group(1)
        if (inline := re.search(r"inline = \[\n(.*?)\n\s*\]", body, re.S)):
            p["inline"] = [line.strip().rstrip(",") for line in inline.group(1).splitlines()]
        out.append(p)
    return out


def packer_build(given: dict[str, str], env: dict, cwd: Path) -> list[tuple[str, int]]:
    """Run the build's provisioners in order as Packer's shell and file provisioners do (on
    this machine for the instance); the first failure ends the build."""
    text = PACKER.read_text()
    variables = packer_variables(text, given)
    ran = []
    for i, p in enumerate(packer_provisioners(text)):
        if p["type"] == "file":
            assert _hcl_string(p["direction"], variables) == "download"
            dest = cwd / _hcl_string(p["destination"], variables)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(_hcl_string(p["source"], variables), dest)
            ran.append(("file", 0))
            continue
        script = cwd / f"packer-shell-{i}.sh"
        script.write_text("#!/bin/sh -e\n" + "\n".join(_hcl_string(x, variables)
                                                      for x in p["inline"]) + "\n")
        script.chmod(0o755)
        cmd = _hcl_string(p.get("execute_command", '"chmod +x {{.Path}}; {{.Vars}} '
                                                   '{{.Path}}"'), variables)
        cmd = cmd.replace("{{ .Path }}", str(script)).replace("{{.Path}}", str(script))
        r = subprocess.run(["sh", "-c", cmd.replace("{{.Vars}}", "")], env=env, cwd=cwd,
                           capture_output=True, text=True, timeout=300)
        (cwd / f"packer-shell-{i}.log").write_text(r.stdout + r.stderr)
        ran.append(("shell", r.returncode))
        if r.returncode != 0:
            break
    return ran


def test_packer_template_on_healthy_and_broken_hosts(hosts, idx, wheelhouse, own_index, stubs,
                                                     tmp_path):
    """The build instance validates for the target type (device checks wait for an instance of
    it): the broken parent image here lacks aws-neuronx-collectives, which validate sees."""
    healthy, _ = hosts
    broken = roots.trn2_host(tmp_path / "no-collectives", packages={
        k: v for k, v in roots.DPKG_NEURON_233.items() if k != "aws-neuronx-collectives"})
    whl = own_wheel(wheelhouse)
    given = dict(region="us-east-2", python=PY312, tool_venv=str(tmp_path / "opt/neuron-env"),
                 venv=str(tmp_path / "opt/neuron-venv"), log_dir=str(tmp_path / "log"),
                 neuron_env_source=str(whl), neuron_env_sha256=sha256(whl),
                 neuron_env_index_url=own_index)
    with pytest.raises(ValueError, match="neuron_env_source"):  # no default source
        packer_variables(PACKER.read_text(), {"region": "us-east-2"})
    env = engine_env(idx, stubs)
    ran = packer_build({**given, "install_args": f"--root {healthy} --installer pip",
                        "doctor_args": f"--root {healthy}"}, env, tmp_path)
    assert ran == [("shell", 0), ("shell", 0), ("file", 0), ("file", 0), ("shell", 0)], \
        (ran, [p.read_text()[-1500:] for p in sorted(tmp_path.glob("packer-shell-*.log"))])
    assert doctor_report(tmp_path / "reports/doctor-validate.json")[0] == 0
    ran = packer_build({**given, "install_args": f"--root {broken} --installer pip",
                        "doctor_args": f"--root {broken}"}, env, tmp_path)
    assert ran[-1] == ("shell", 1) and len(ran) == 5  # the reports fetched, then it fails
    rc, results = doctor_report(tmp_path / "reports/doctor-validate.json")
    assert rc == 1 and results["backend.collectives"] == "fail"
    # a wheel whose sha256 does not match is never installed
    bad = packer_build({**given, "neuron_env_sha256": "0" * 64,
                        "tool_venv": str(tmp_path / "other-tool")}, env, tmp_path)
    assert bad == [("shell", 2)]
    assert "does not match" in (tmp_path / "packer-shell-0.log").read_text()
    assert not (tmp_path / "other-tool/bin/neuron-env").exists()


# -- user data ----------------------------------------------------------------------------------
def _userdata_env(idx, stubs: Path, imds, tmp_path: Path, **extra) -> dict:
    env = engine_env(idx, stubs, AWS_EC2_METADATA_DISABLED=None,
                     AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url, NEURON_ENV_RETRY_DELAY="0")
    return {**env, **extra}


def test_user_data_first_boot_healthy_then_broken(hosts, idx, wheelhouse, own_index, stubs,
                                                  tmp_path):
    healthy, broken = hosts
    whl = own_wheel(wheelhouse)
    served = tmp_path / "bucket"
    served.mkdir()
    shutil.copy(whl, served / whl.name)
    with IndexServer(served) as bucket, IMDS() as imds:
        url = bucket.url.removesuffix("/simple") + "/" + whl.name
        opts = BootstrapOptions(
            source=url, source_sha256=sha256(whl), source_index_url=own_index,
            tool_venv=str(tmp_path / "opt/neuron-env"), venv=str(tmp_path / "opt/neuron-venv"),
            python=PY312, log_dir=str(tmp_path / "log"), state_dir=str(tmp_path / "state"),
            smoke=False, install_args=f"--root {healthy} --installer pip",
            doctor_args=f"--root {healthy}")
        script = tmp_path / "user-data.sh"
        script.write_text(userdata(opts))
        env = _userdata_env(idx, stubs, imds, tmp_path)
        r = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                           timeout=300, cwd="/")
        assert r.returncode == 0, r.stderr[-3000:]
        assert [p for p in bucket.requests if p.endswith(".whl")] == [f"/{whl.name}"]
        boot = (tmp_path / "log/bootstrap.log").read_text()
        assert "--wait 120" in boot  # first boot waits for the driver (docs/doctor.md)
        assert doctor_report(tmp_path / "log/doctor.json")[0] == 0
        # a reboot with the same settings: nothing to do; changed doctor arguments: run again
        again = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                               timeout=120, cwd="/")
        assert again.returncode == 0 and "already bootstrapped" in again.stderr
        changed = subprocess.run(
            ["bash", str(script)], capture_output=True, text=True, timeout=300, cwd="/",
            env={**env, "NEURON_ENV_EXTRA_DOCTOR_ARGS": f"--root {broken}",
                 "NEURON_ENV_EXTRA_INSTALL_ARGS": f"--root {broken} --installer pip",
                 "NEURON_ENV_DOCTOR_WAIT": "1"})
    assert changed.returncode == 1 and "already bootstrapped" not in changed.stderr, \
        changed.stderr[-2000:]
    rc, results = doctor_report(tmp_path / "log/doctor.json")
    assert rc == 1 and results["driver.versions"] == "fail"
    assert not (stubs / "apt-get.calls").exists()


def test_user_data_refuses_a_wheel_whose_sha256_differs(idx, wheelhouse, stubs, tmp_path):
    whl = own_wheel(wheelhouse)
    opts = BootstrapOptions(source=str(whl), source_sha256="0" * 64,
                            tool_venv=str(tmp_path / "tool"), python=PY312,
                            log_dir=str(tmp_path / "log"), state_dir=str(tmp_path / "state"))
    script = tmp_path / "user-data.sh"
    script.write_text(userdata(opts))
    with IMDS() as imds:
        r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120,
                           env=_userdata_env(idx, stubs, imds, tmp_path), cwd="/")
    assert r.returncode == 2 and f"not {'0' * 64}: not installed" in r.stderr
    assert "retry" not in r.stderr  # deterministic: said once
    assert not (tmp_path / "tool/bin/neuron-env").exists()


# -- Slurm: a real slurmd runs the health check -------------------------------------------------
@pytest.fixture(scope="module")
def target_venv(tmp_path_factory) -> Path:
    """The venv the user data and the AMI create, as doctor sees it (metadata only)."""
    py = make_venv(tmp_path_factory.mktemp("venv") / "neuron-venv", PY312)
    site = site_packages(py)
    for name, version in GOOD_234.items():
        add_dist(site, name, version)
    return py


def slurm_script(cluster, root: Path, python: Path, report: Path) -> str:
    from neuron_env.fleet.slurm import render_script

    script = render_script(NEURON_ENV, 45, ["--root", str(root), "--report",
                                            f"json:{report}"], python=str(python))
    head, _, rest = script.partition("\n")  # the test cluster's config is not the default
    return f"{head}\nexport SLURM_CONF={cluster.conf}\n{rest}"


def _wait_report(cluster, report: Path) -> tuple[int, dict[str, str]]:
    import time

    deadline = time.monotonic() + 60
    while not report.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1)  # the script's drain/resume after doctor
    return doctor_report(report)


def test_slurm_health_check_under_slurmd(cluster, target_venv, tmp_path):
    """slurmd's near-empty environment: no login PATH, no venv on PATH. The healthy node's
    tools are where aws-neuronx-tools installs them, without the profile.d line: a warning,
    not a drain; the venv judged is the rendered --python, not python3 on PATH."""
    healthy = roots.add_neuron_tools(roots.trn2_host(tmp_path / "healthy", tools=False),
                                     on_path=False)
    broken = roots.trn2_host(tmp_path / "broken", driver=BROKEN)
    try:
        report = tmp_path / "healthy.json"
        cluster.set_health_check(slurm_script(cluster, healthy, target_venv, report))
        rc, results = _wait_report(cluster, report)
        assert rc == 0 and results["tools.path"] == "warn", results
        assert results["python.version"] == "pass" and results["backend.pairing"] == "pass"
        assert cluster.wait_for("idle") == "idle", cluster.reason()
        report = tmp_path / "broken.json"
        cluster.set_health_check(slurm_script(cluster, broken, target_venv, report))
        rc, results = _wait_report(cluster, report)
        assert rc == 1 and results["driver.versions"] == "fail"
        assert cluster.wait_for("drain") == "drain"
        assert cluster.reason().startswith("neuron-env: driver.versions")
    finally:
        cluster.set_health_check("#!/bin/sh\nexit 0\n")
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume")


def test_slurm_default_judges_the_bootstrap_venv():
    from neuron_env.fleet.slurm import DEFAULT_PYTHON, render_script

    script = render_script(NEURON_ENV, 45, [])
    assert f"\nPYTHON={DEFAULT_PYTHON}  #" in script
    assert f"{BootstrapOptions().venv}/bin/python" == DEFAULT_PYTHON
    assert 'doctor --python "$PYTHON"' in script


# -- node-problem-detector: the plugin on a read-only root ---------------------------------------
UNSHARE = shutil.which("unshare")


def npd_run(root: Path, tmp_path: Path, **kw) -> subprocess.CompletedProcess:
    """The ConfigMap's plugin script, run as NPD runs it (no login environment), with the
    fixture root bind-mounted read-only in a private mount namespace; `chroot /host CMD ARGS`
    runs CMD ARGS --root MOUNT (the fixture has no interpreter to chroot into)."""
    from neuron_env.fleet import k8s

    tmp_path.mkdir(parents=True, exist_ok=True)
    docs = k8s.manifests(neuron_env=NEURON_ENV, **kw)
    cm = next(d for d in docs if d["kind"] == "ConfigMap")["data"]
    plugin = tmp_path / "neuron-env-check.sh"
    plugin.write_text(cm["neuron-env-check.sh"])
    plugin.chmod(0o755)
    mnt = tmp_path / "host"
    mnt.mkdir()
    shim = tmp_path / "shim"
    roots.add_executable(shim / "chroot", '[ "$1" = /host ] || exit 125\nshift\n'
                         f'exe=$1\nshift\nexec "$exe" "$@" --root {mnt}\n')
    inner = (f"mount --bind {root} {mnt} && mount -o remount,bind,ro {mnt} && "
             f"! touch {mnt}/probe 2>/dev/null && exec {plugin}")
    return subprocess.run([UNSHARE, "-m", "sh", "-c", inner], capture_output=True, text=True,
                          timeout=120, env={"PATH": f"{shim}:/usr/sbin:/usr/bin:/sbin:/bin"})


@pytest.mark.skipif(UNSHARE is None or os.geteuid() != 0,
                    reason="a read-only bind mount needs root and unshare (util-linux)")
def test_npd_plugin_on_a_read_only_amazon_linux_root(tmp_path):
    """The EKS Neuron AMI is Amazon Linux 2023 (rpm, no dpkg): the node-level profile passes a
    healthy node (it failed os.release before), fails one with half its devices missing, and
    fails a dpkg-based node whose loaded driver is older than its dkms, and one whose containerd
    runs the Neuron OCI hook wrapper that is not installed (container.hook)."""
    healthy = roots.add_neuron_oci_hook(
        roots.trn2_host(tmp_path / "healthy", os="amzn-2023", packages=None))
    unhooked = roots.add_neuron_oci_hook(
        roots.trn2_host(tmp_path / "unhooked", os="amzn-2023", packages=None), wrapper=False)
    missing = roots.trn2_host(tmp_path / "missing", os="amzn-2023", packages=None, devices=8)
    broken = roots.trn2_host(tmp_path / "broken", driver=BROKEN)
    ok = npd_run(healthy, tmp_path / "a")
    assert ok.returncode == 0 and ok.stdout.startswith("neuron-env: ok"), ok.stdout + ok.stderr
    half = npd_run(missing, tmp_path / "b")
    assert half.returncode == 1 and half.stdout.startswith("neuron-env: driver.devices: 8 of 16")
    bad = npd_run(broken, tmp_path / "c")
    assert bad.returncode == 1 and bad.stdout.startswith("neuron-env: driver.versions"), \
        bad.stdout + bad.stderr
    hook = npd_run(unhooked, tmp_path / "d")
    assert hook.returncode == 1 and hook.stdout.startswith("neuron-env: container.hook"), \
        hook.stdout + hook.stderr
    assert all(len(p.stdout.rstrip("\n")) <= 80 for p in (ok, half, bad, hook))


# -- the CI rehearsal recipe of docs/bootstrap.md ------------------------------------------------
def test_ci_rehearsal_recipe_runs_on_an_emulated_venv(torch_python, tmp_path):
    """The GitHub Actions job in docs/bootstrap.md: it uses action.yml's `rehearsal` input with
    only inputs the action declares, and the action's rehearsal step, run by the runner's bash
    with that job's inputs on a rehearsal venv (torch + the emulated backend, as `install
    --backend emulated` leaves it, given as rehearsal-python), writes trial's JUnit."""
    import xml.etree.ElementTree as ET

    text = (REPO / "docs/bootstrap.md").read_text()
    section = text[text.index("## CI rehearsal on a hosted runner"):]
    block = section[section.index("```yaml\n") + 8:section.index("```\n", 8)]
    steps = yaml.safe_load(block)["jobs"]["rehearse"]["steps"]
    ours = next(s for s in steps if "/neuron-env@" in s.get("uses", ""))
    action = yaml.safe_load((REPO / "action.yml").read_text())
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    assert set(ours["with"]) <= set(inputs) and ours["with"].get("rehearsal"), ours
    inputs.update({k: str(v) for k, v in ours["with"].items()}, **{
        "rehearsal-python": torch_python})
    step = next(s for s in action["runs"]["steps"] if s["id"] == "rehearsal")
    (tmp_path / "train.py").write_text(
        "import torch\n\n\ndef build():\n    torch.manual_seed(0)\n"
        "    return torch.nn.Linear(8, 4), (torch.randn(2, 8),)\n")
    out = tmp_path / "github-output"
    out.write_text("")
    values = {**{f"inputs.{k}": v for k, v in inputs.items()},
              "steps.install.outputs.bin": NEURON_ENV, "runner.temp": str(tmp_path)}
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true", "GITHUB_OUTPUT": str(out),
           **{k: re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: values[m.group(1)], v)
              for k, v in step["env"].items()}}
    p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "exit-code=0" in out.read_text()
    junit = tmp_path / inputs["trial-junit-file"]
    assert ET.parse(junit).getroot().tag in ("testsuites", "testsuite")
