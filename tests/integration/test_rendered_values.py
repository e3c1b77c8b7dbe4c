"""Every renderer of a script or a YAML document goes through util/template.py: hostile values
(line breaks YAML knows besides LF: U+0085, U+2028, U+2029; U+FEFF; quotes, `}`, `$(...)`,
another renderer's `@@PLACEHOLDER@@`) are either refused (exit 2, naming the option) or come
back as ONE value: `bash -n` parses each script, PyYAML each document, and `shlex.split` of the
line gives the value back as one word. docs/security.md, "Rendered scripts"."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neuron_env.bootstrap.userdata import BootstrapOptions, component, userdata
from neuron_env.collectives import launch as coll_launch
from neuron_env.collectives.options import CollectivesOptions
from neuron_env.errors import UsageError
from neuron_env.fleet import k8s, slurm
from neuron_env.trial import distributed as dist
from neuron_env.trial.options import TrialOptions
from neuron_env.util.template import bad_char
from tests.helpers.cli import run_cli

pytestmark = [pytest.mark.integration]

HOSTILE = ["\x85", "\u2028", "\u2029", "\ufeff", "\n", "\r", "\t", "\x1b", "\x00", "\x7f",
           "\u202e", "'", '"', "}", "{", "$(id)", "`id`", ";", "&", "|", "#", " ", "\\", "*",
           "~", "!", ": ", "- ", "@@DOCTOR_ARGS@@", "@@SOURCE@@", "@@ENV@@", "@@NEURON_ENV@@",
           "%", "=", "\u00e9", "\U0001f600", "\ufffe"]
VALUES = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=3)), min_size=1,
                  max_size=6).map("".join)
ISSUE_CASES = ["/x@@DOCTOR_ARGS@@", "/x'y", "/x}y", "/opt/it's here/bin/python",
               "/a;b/$(touch pwned)/`id`", "/v\u2028- touch /pwned", "/v\x85x", "/v\ufeff"]


def bash_n(script: str, shell: str = "bash") -> None:
    p = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, (p.stderr, script)


def line_with(text: str, start: str) -> list[str]:
    """The words of the first line that starts with `start` (after blanks), as a shell reads
    them."""
    for ln in text.splitlines():
        if ln.strip().startswith(start):
            return shlex.split(ln, comments=True)
    raise AssertionError(f"no line starts with {start!r}")


def refused(fn, *a, **kw) -> UsageError | None:
    try:
        fn(*a, **kw)
    except UsageError as e:
        return e
    return None


# neuron-env is not on the public index: every rendering names its source (#44)
SRC = {"source": "neuron-env==0.1.0", "source_index_url": "https://pypi.internal.example.com/simple"}


def no_source(field: str, val: str) -> bool:
    """An empty source, or a wheel without its sha256: refused (#44)."""
    return field == "source" and (not val or val.endswith(".whl"))


# -- user data ----------------------------------------------------------------------------------
USERDATA_FIELDS = {"source": "NEURON_ENV_SOURCE", "python": "NEURON_ENV_BASE_PYTHON",
                   "tool_venv": "NEURON_ENV_TOOL_VENV", "venv": "NEURON_ENV_TARGET_VENV",
                   "log_dir": "NEURON_ENV_LOG_DIR", "state_dir": "NEURON_ENV_STATE_DIR"}
ABSOLUTE = {"tool_venv", "venv", "log_dir", "state_dir"}


def check_userdata(v: str) -> None:
    for field, var in USERDATA_FIELDS.items():
        val = "/" + v if field in ABSOLUTE else v
        o = BootstrapOptions(**{**SRC, field: val})
        if bad_char(val) or no_source(field, val):
            e = refused(userdata, o)
            assert e is not None and f"--{field.replace('_', '-')}" in e.message, (field, val)
            continue
        text = userdata(o)
        bash_n(text)
        assert line_with(text, f"setting {var} ") == ["setting", var, val]
    # extra arguments: split as the shell would, each word back as one word
    o = BootstrapOptions(**SRC, doctor_args=shlex.quote(v))
    if bad_char(v):
        assert refused(userdata, o) is not None
    else:
        text = userdata(o)
        bash_n(text)
        assert shlex.split(text.split("EXTRA_DOCTOR=(", 1)[1].split(")\n", 1)[0]) == [v]


# -- the Image Builder component ------------------------------------------------------------------
def component_commands(text: str) -> list[str]:
    doc = yaml.safe_load(text)
    out = []
    for phase in doc["phases"]:
        for step in phase["steps"]:
            cmds = step["inputs"]["commands"]
            assert len(cmds) == 1 and isinstance(cmds[0], str), cmds  # never extra items
            out.append(cmds[0])
    return out


def check_component(v: str) -> None:
    for field in ("source", "python", "tool_venv", "venv", "log_dir", "instance_type",
                  "neuron_index_url"):
        val = "/" + v if field in ABSOLUTE else v
        o = BootstrapOptions(**{**SRC, field: val})
        e = refused(component, o)
        if bad_char(val) or no_source(field, val):
            flag = "--" + field.replace("_", "-")
            assert e is not None and flag in e.message, (field, val)
            continue
        if e is not None:  # an index URL that is no URL, or holds credentials
            assert field == "neuron_index_url", (field, val, e.message)
            continue
        cmds = component_commands(component(o))
        words = set()
        for c in cmds:
            bash_n(c)
            words |= {w for ln in c.splitlines() for w in shlex.split(ln)}
        assert not val or val in words or f"NEURON_ENV_NEURON_INDEX_URL={val}" in words, \
            (field, val)


# -- Slurm --------------------------------------------------------------------------------------
def check_slurm(v: str) -> None:
    ne = "/" + v
    if bad_char(ne):
        assert "--neuron-env" in refused(slurm.render_script, ne, 45, []).message
    else:
        text = slurm.render_script(ne, 45, [])
        bash_n(text)
        assert line_with(text, "rendered=") == [f"rendered={ne}"]
    reserved = v in ("--format", "--slurm-drain") or v.startswith("--format=")
    e = refused(slurm.render_script, "/opt/ne", 45, [v])
    if bad_char(v) or reserved:
        assert e is not None and "--doctor-args" in e.message
    else:
        text = slurm.render_script("/opt/ne", 45, [v])
        bash_n(text)
        assert line_with(text, "timeout -k 5")[-1] == v
    e = refused(slurm.render_conf, ne, 300, True)
    if bad_char(ne) or any(c.isspace() for c in ne):
        assert e is not None and "--path" in e.message
    else:
        conf = slurm.render_conf(ne, 300, True)
        assert f"\nHealthCheckProgram={ne}\n" in conf and f"\nProlog={ne}\n" in conf
        words = shlex.split(conf.splitlines()[1].split("first:", 1)[1])
        assert words[words.index(">") + 1] == ne


# -- Kubernetes ---------------------------------------------------------------------------------
def check_k8s(v: str) -> None:
    for kw in ({"namespace": v}, {"image": v}, {"neuron_env": "/" + v}, {"doctor_args": [v]}):
        val = next(iter(kw.values()))
        val = val[0] if isinstance(val, list) else val
        e = refused(k8s.manifests, **kw)
        if bad_char(val) or ("neuron_env" in kw and any(c.isspace() for c in val)):
            assert e is not None, kw
            continue
        assert e is None, (kw, e)
        ms = k8s.manifests(**kw)
        assert list(yaml.safe_load_all(k8s.to_yaml(ms))) == ms  # the whole structure
        script = ms[3]["data"]["neuron-env-check.sh"]
        bash_n(script, "sh")
        words = shlex.split(script.strip().splitlines()[-1])
        assert words[3] == kw.get("neuron_env", "/opt/neuron-env/bin/neuron-env")
        assert words[7:9] == ["--only", k8s.NODE_CHECKS]  # the node-level profile
        assert words[9:] == kw.get("doctor_args", [])


# -- --print-launch (collectives and trial share sh_join) ---------------------------------------
def check_launch(v: str) -> None:
    py = "/" + v
    o = CollectivesOptions(device="cpu", ops=("all_reduce",), sizes=(8,), iterations=1)
    t, d = TrialOptions(model="builtin:mlp"), dist.DistOptions(world_size=8, nnodes=2)
    for kind in ("srun", "torchrun"):
        if bad_char(py):
            assert refused(coll_launch.render, kind, "/ne", py, o, 2, 8) is not None
            assert refused(dist.launch_script, kind, py, t, d) is not None
            continue
        for text in (coll_launch.render(kind, "/ne", py, o, 2, 8),
                     dist.launch_script(kind, py, t, d)):
            bash_n(text)
        words = line_with(coll_launch.render(kind, "/ne", py, o, 2, 8), kind)
        assert words[words.index("--python") + 1] == py
        text = dist.launch_script(kind, py, t, d)
        starts = [shlex.split(ln)[0] for ln in text.splitlines()
                  if ln.startswith(shlex.quote(py))]
        assert starts == [py] * (1 if kind == "srun" else 2), text  # reference (+ agents)
        if kind == "srun":
            assert line_with(text, "srun ")[2:4] == ["--", py]


CHECKS = [check_userdata, check_component, check_slurm, check_k8s, check_launch]


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("v", ISSUE_CASES)
def test_each_hostile_value_is_refused_or_one_value(check, v):
    check(v)


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_every_hostile_character_alone(check):
    for v in HOSTILE:
        check(v)


def _every_renderer(v: str) -> None:
    for check in CHECKS:
        check(v)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v=VALUES)
@example(v="\u2028- touch /pwned")
def test_hostile_strings_through_every_renderer(v):
    _every_renderer(v)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v=VALUES)
def test_many_hostile_strings_through_every_renderer(v):
    _every_renderer(v)


# -- the CLI: exit 2 naming the option; text and JSON carry the same bytes -----------------------
@pytest.mark.parametrize("flag, value", [("--source", "neuron-env\x85- touch /pwned"),
                                         ("--venv", "/opt/v\u2028x"), ("--log-dir", "/l\u2029"),
                                         ("--neuron-index-url", "https://m/\ufeffsimple")])
def test_imagebuilder_refuses_yaml_line_breaks_in_every_value(flag, value):
    for fmt in ("text", "json"):
        p = run_cli("imagebuilder-component", flag, value, "--format", fmt)
        assert p.returncode == 2 and flag in p.stderr, (p.stdout, p.stderr)


def test_imagebuilder_text_and_json_are_the_same_bytes():
    args = ["imagebuilder-component", "--source", "/w h'e;re", "--venv", "/opt/v x"]
    text = run_cli(*args).stdout
    assert json.loads(run_cli(*args, "--format", "json").stdout)["script"] == text
    assert len(component_commands(text)) == 4


# -- the Slurm health check, run by bash with a fake scontrol and a fake neuron-env --------------
def _run_healthcheck(tmp_path: Path, script: str, node_line: str = "NodeName=n1 State=IDLE",
                     env: dict | None = None) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "scontrol.log"
    (bin_dir / "scontrol").write_text(
        '#!/bin/sh\nprintf "%s\\n" "$*" >> "$SCONTROL_LOG"\n'
        'if [ "$1" = show ]; then printf "%s\\n" "$FAKE_NODE"; fi\n')
    (bin_dir / "scontrol").chmod(0o755)
    hc = tmp_path / "hc.sh"
    hc.write_text(script)
    p = subprocess.run(["bash", str(hc)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURMD_NODENAME": "n1",
                            "SCONTROL_LOG": str(log), "FAKE_NODE": node_line, **(env or {})})
    calls = log.read_text().splitlines() if log.exists() else []
    return p, [c for c in calls if c.startswith("update")]


def _fake_doctor(path: Path, rc: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGV_LOG"\nexit {rc}\n')
    path.chmod(0o755)
    return path


def test_healthcheck_fills_in_one_pass_and_quotes_neuron_env(tmp_path):
    """--neuron-env '/x@@DOCTOR_ARGS@@' with --doctor-args '$(...)' ran the substitution as root;
    one `'` gave a script that does not parse; a `}` cut the path. Now: the path as given."""
    ne = _fake_doctor(tmp_path / "it's a }dir@@DOCTOR_ARGS@@" / "neuron-env", 0)
    pwned = tmp_path / "pwned"
    script = slurm.render_script(str(ne), 45, [f"$(touch {pwned})", "a b"])
    p, updates = _run_healthcheck(tmp_path, script, env={"ARGV_LOG": str(tmp_path / "argv")})
    assert p.returncode == 0, p.stdout + p.stderr
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[-2:] == [f"$(touch {pwned})", "a b"] and not pwned.exists()
    assert updates == []


@pytest.mark.parametrize("rc, drained", [(0, False), (1, False), (2, True), (3, True),
                                         (4, True), (42, True), (127, True)])
def test_healthcheck_drains_on_every_exit_not_through_the_drain_step(tmp_path, rc, drained):
    """Exit 3 (a crash) was taken for 'doctor already drained': a crashing doctor never
    drained its node."""
    ne = _fake_doctor(tmp_path / "ne" / "neuron-env", rc) if rc != 127 else tmp_path / "none"
    p, updates = _run_healthcheck(tmp_path, slurm.render_script(str(ne), 45, []),
                                  env={"ARGV_LOG": os.devnull})
    assert p.returncode == rc
    if drained:
        assert len(updates) == 1 and "state=drain" in updates[0], updates
        assert f"exit {rc}" in updates[0] or "cannot run" in updates[0], updates
    else:
        assert updates == []


def test_healthcheck_keeps_the_reason_doctor_drained_with(tmp_path):
    """Exit 3 after doctor's own drain step (an error result drained the node): its reason
    stays."""
    ne = _fake_doctor(tmp_path / "ne" / "neuron-env", 3)
    p, updates = _run_healthcheck(
        tmp_path, slurm.render_script(str(ne), 45, []), env={"ARGV_LOG": os.devnull},
        node_line="NodeName=n1 State=IDLE+DRAIN Reason=neuron-env: driver.loaded [root@...]")
    assert p.returncode == 3 and updates == []


# -- --print-launch through the CLI: the printed lines give back the argv ---------------------
PY = "/opt/my venv/it's;x/bin/python"


@pytest.mark.parametrize("kind", ["srun", "torchrun"])
def test_print_launch_round_trips_through_shlex(kind):
    """trial put `--python PATH` into the srun line unquoted; collectives, without neuron-env
    on PATH, quoted `python -m neuron_env` as ONE word (a command that cannot run)."""
    import sys

    from neuron_env.target_python import launch

    env = {**os.environ, "PATH": "/usr/bin:/bin", "AWS_EC2_METADATA_DISABLED": "true"}
    p = run_cli("collectives", "--print-launch", kind, "--python", PY, env=env)
    assert p.returncode == 0, p.stderr
    words = line_with(p.stdout, kind)
    assert words[words.index("--python") + 1] == PY
    assert words[words.index("collectives") - 4] == "--"  # the launcher's options end
    # never `python -m` (the cwd first on sys.path, #45): the one module-line builder
    assert [sys.executable, launch.script_path("run_module.py"), "neuron_env",
            "collectives"] == words[words.index("collectives") - 3:words.index("collectives") + 1]
    p = run_cli("trial", "builtin:mlp", "--world-size", "8", "--nnodes", "2",
                "--print-launch", kind, "--python", PY)
    assert p.returncode == 0, p.stderr
    starts = [shlex.split(ln)[0] for ln in p.stdout.splitlines()
              if ln.startswith(shlex.quote(PY))]
    assert starts == [PY] * (1 if kind == "srun" else 2)
    if kind == "srun":
        assert line_with(p.stdout, "srun ")[2:4] == ["--", PY]
    bash_n(p.stdout)
