"""Issue #45 (security round 4), the parts that run other processes: doctor's fix lines pasted
into bash with a hostile os-release, `--print-launch` lines run from a cwd holding a hostile
`json.py`, the inside scripts' files in a run directory with planted links."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.util.record import replace
from tests.helpers.facts import host

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
STUBS = ("sudo", "apt-get", "curl", "gpg", "tee", "install", "modprobe", "dpkg-reconfigure",
         "add-apt-repository", "aws", "neuron-env", "uv", "python", "uname")


@pytest.fixture()
def stubs(tmp_path) -> Path:
    d = tmp_path / "stubs"
    d.mkdir()
    for n in STUBS:
        body = 'exec "$@"' if n == "sudo" else 'echo "$0 $*" >> "$STUB_LOG"; cat >/dev/null' \
            if n == "tee" else 'echo "$0 $*" >> "$STUB_LOG"'
        (d / n).write_text(f"#!/bin/sh\n{body}\n")
        (d / n).chmod(0o755)
    return d


# -- finding 6: the image's VERSION_CODENAME is one quoted word of the apt fix line ------------
HOSTILE = ("noble $(touch {m}) x", "noble; touch {m}", "noble `touch {m}`",
           'noble" ; touch {m}; echo "', "noble\ntouch {m}", "noble && touch {m} #")


@pytest.mark.parametrize("codename", HOSTILE)
def test_a_hostile_codename_in_os_release_runs_nothing_when_the_fix_is_pasted(
        codename, stubs, tmp_path):
    marker = tmp_path / "ran"
    facts = host(module=None, apt={})
    facts = replace(facts, os=replace(facts.os, codename=codename.format(m=marker)))
    lines = [r.fix_command for r in checks.run_checks(facts, catalog.select("2.33"),
                                                        checks.Context(), checks.all_ids())
             if r.fix_command and "apt" in r.fix_command]
    assert lines, "no apt fix line for a host without the driver"
    env = dict(os.environ, PATH=f"{stubs}:/usr/bin:/bin", STUB_LOG=str(tmp_path / "log"),
               HOME=str(tmp_path))
    for line in lines:
        assert subprocess.run(["bash", "-n", "-c", line], capture_output=True).returncode == 0
        subprocess.run(["bash", "-c", line], capture_output=True, env=env, timeout=30,
                       cwd=tmp_path)
        assert not marker.exists(), f"the pasted fix ran the os-release text: {line}"


# -- finding 5: every printed launch line runs nothing from the operator's cwd -----------------
def _hostile_cwd(tmp_path: Path) -> tuple[Path, Path]:
    """A directory holding a `json.py` (and `runpy.py`) that leave a marker when imported."""
    cwd, marker = tmp_path / "cwd", tmp_path / "imported-from-cwd"
    cwd.mkdir()
    for mod in ("json", "runpy"):
        (cwd / f"{mod}.py").write_text(
            f"import os\nos.close(os.open({str(marker)!r}, os.O_CREAT | os.O_WRONLY, 0o600))\n"
            f"raise SystemExit('the cwd\\'s {mod}.py ran')\n")
    return cwd, marker


def _steps(script: str) -> list[str]:
    """The command lines of a printed script (comments and blank lines dropped)."""
    return [x for x in script.splitlines() if x.strip() and not x.startswith("#")]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_printed_torchrun_lines_import_nothing_from_the_cwd(torch_python, tmp_path):
    """trial --print-launch torchrun: the reference and the torchrun agent line (in-process
    launches share its builder) run from a cwd holding json.py; then --collect passes."""
    from tests.helpers import procs
    from tests.helpers.cli import cli_env, run_cli

    p = run_cli("trial", "builtin:mlp", "--world-size", "2", "--device", "cpu",
                "--iterations", "3", "--print-launch", "torchrun", "--python", torch_python)
    assert p.returncode == 0, p.stderr
    script = p.stdout.replace(":29500 ", f":{_free_port()} ")
    script = script[:script.index("# 3.")]
    cwd, marker = _hostile_cwd(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    tok = procs.token("trial-dist-hostile-cwd")
    done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=cli_env(RUN_DIR=str(run_dir), HEAD_ADDR="127.0.0.1",
                                                   **{procs.VAR: tok}))
    assert not marker.exists(), done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert (run_dir / "rank1.json").exists() and procs.with_token(tok) == []


def test_printed_collectives_rank_line_imports_nothing_from_the_cwd(torch_python, tmp_path):
    """collectives --print-launch with no neuron-env on PATH prints `python ... neuron_env`:
    that line, run from a cwd holding json.py, runs one real rank."""
    import sys

    from tests.helpers.cli import cli_env

    env = cli_env(PATH=f"{Path(sys.executable).parent.parent / 'nobin'}:/usr/bin:/bin")
    p = subprocess.run([sys.executable, "-m", "neuron_env", "collectives", "--print-launch",
                        "srun", "--nodes", "1", "--device", "cpu", "--ops", "all_reduce",
                        "--sizes", "1K", "--iterations", "2", "--python", torch_python],
                       capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stderr
    line = next(x for x in _steps(p.stdout) if x.startswith("srun "))
    rank = line.split(" -- ", 1)[1]
    assert "neuron_env" in rank and " -m " not in rank, rank
    cwd, marker = _hostile_cwd(tmp_path)
    done = subprocess.run(["bash", "-c", rank], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=dict(env, RANK="0", WORLD_SIZE="1",
                                                MASTER_ADDR="127.0.0.1",
                                                MASTER_PORT=str(_free_port())))
    assert not marker.exists(), done.stderr[-2000:]
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])


def test_every_printed_python_line_names_a_script_not_a_module():
    """Static, every launcher: no printed line runs `python -m` (the cwd first on sys.path)."""
    import sys

    from tests.helpers.cli import cli_env, run_cli

    env = cli_env(PATH="/usr/bin:/bin")
    outs = [run_cli("trial", "builtin:mlp", "--world-size", "2", "--print-launch", kind,
                    "--python", "/opt/venv/bin/python", env=env).stdout
            for kind in ("torchrun", "srun")]
    outs += [subprocess.run([sys.executable, "-m", "neuron_env", "collectives",
                             "--print-launch", kind, "--nodes", "2"], capture_output=True,
                            text=True, env=env, timeout=60, cwd=REPO).stdout
             for kind in ("torchrun", "srun")]
    for out in outs:
        assert out.strip()
        for line in _steps(out):
            assert " -m " not in line, line


# -- finding 3: the distributed trial's own files in RUN_DIR never go through a planted link ---
def _reference_line(torch_python: str) -> str:
    from tests.helpers.cli import run_cli

    p = run_cli("trial", "builtin:mlp", "--world-size", "2", "--device", "cpu",
                "--iterations", "2", "--print-launch", "srun", "--python", torch_python)
    assert p.returncode == 0, p.stderr
    return next(x for x in _steps(p.stdout) if '"role": "reference"' in x)


def test_planted_links_in_run_dir_are_replaced_not_written_through(torch_python, tmp_path):
    from tests.helpers.cli import cli_env

    victim = tmp_path / "authorized_keys"
    victim.write_text("KEEP\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    for name in ("reference.pid", "reference.steps", "reference.pt", "reference.json",
                 "reference.json.tmp", "reference.error"):
        (run_dir / name).symlink_to(victim)
    done = subprocess.run(["bash", "-c", _reference_line(torch_python)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env=cli_env(RUN_DIR=str(run_dir)))
    assert victim.read_text() == "KEEP\n", done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("reference.pid", "reference.steps", "reference.pt", "reference.json"):
        assert not (run_dir / name).is_symlink() and (run_dir / name).stat().st_size > 0, name


def test_a_run_dir_others_can_write_gets_no_file(torch_python, tmp_path):
    from tests.helpers.cli import cli_env

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_dir.chmod(0o777)
    done = subprocess.run(["bash", "-c", _reference_line(torch_python)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env=cli_env(RUN_DIR=str(run_dir)))
    assert done.returncode == 2 and "not trusted" in done.stderr, done.stderr[-2000:]
    assert list(run_dir.iterdir()) == []


def test_hostile_host_strings_in_every_scenario_run_nothing_when_fixes_are_pasted(stubs,
                                                                                   tmp_path):
    """The property over every fix builder: hostile text in the host's codename, the target's
    path and its packages' versions; every fix line doctor prints for those hosts passes
    bash -n and runs (against stubs) without running anything from the input."""
    from tests.helpers.facts import GOOD, target

    marker = tmp_path / "ran"
    evil = f"$(touch {marker})"
    bad_pkgs = {**GOOD, "torch": f"2.13.0;touch {marker}", "neuron-emulator": f"0.1 {evil}"}
    hosts = [host(module=None, apt={}), host(tgt=target({})), host(tgt=target(bad_pkgs)),
             host(tgt=target(version="3.11.7")), host(apt={"aws-neuron-dkms": "2.1"})]
    lines = []
    for facts in hosts:
        facts = replace(facts, os=replace(facts.os, codename=f"noble {evil} x"),
                        target=replace(facts.target, path=f"/venv/bin/python {evil}"))
        lines += [r.fix_command for r in checks.run_checks(
            facts, catalog.select("2.33"), checks.Context(python_flag=facts.target.path),
            checks.all_ids()) if r.fix_command]
    assert len(lines) >= 5, lines
    env = dict(os.environ, PATH=f"{stubs}:/usr/bin:/bin", STUB_LOG=str(tmp_path / "log"),
               HOME=str(tmp_path))
    for line in lines:
        assert subprocess.run(["bash", "-n", "-c", line], capture_output=True).returncode == 0
        subprocess.run(["bash", "-c", line], capture_output=True, env=env, timeout=30,
                       cwd=tmp_path)
        assert not marker.exists(), f"a pasted fix ran text from the host: {line}"


SRUN = """#!/bin/sh
# a stand-in for `srun --kill-on-bad-exit=1 -- CMD...`: STUB_NTASKS copies of CMD on this host
shift 2
n=${STUB_NTASKS:-1}; i=0; pids=""
while [ $i -lt $n ]; do
  SLURM_PROCID=$i SLURM_NTASKS=$n SLURM_LOCALID=$i "$@" & pids="$pids $!"; i=$((i+1))
done
rc=0; for p in $pids; do wait $p || rc=1; done; exit $rc
"""


def test_printed_srun_script_imports_nothing_from_the_cwd(torch_python, tmp_path):
    """trial --print-launch srun, run as printed (stub srun and scontrol on this host) from a
    cwd holding json.py: the reference and both ranks run, nothing from the cwd."""
    from tests.helpers import procs
    from tests.helpers.cli import cli_env, run_cli

    p = run_cli("trial", "builtin:mlp", "--world-size", "2", "--device", "cpu",
                "--iterations", "2", "--print-launch", "srun", "--python", torch_python)
    assert p.returncode == 0, p.stderr
    script = p.stdout.replace("MASTER_PORT=29500", f"MASTER_PORT={_free_port()}")
    script = script[:script.index("# 3.")]
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "srun").write_text(SRUN)
    (bin_ / "scontrol").write_text("#!/bin/sh\necho 127.0.0.1\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    cwd, marker = _hostile_cwd(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    tok = procs.token("trial-dist-srun-hostile-cwd")
    env = cli_env(RUN_DIR=str(run_dir), STUB_NTASKS="2", SLURM_JOB_NODELIST="n1",
                  PATH=f"{bin_}:{os.environ['PATH']}", **{procs.VAR: tok})
    done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)
    assert not marker.exists(), done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert (run_dir / "rank0.json").exists() and (run_dir / "rank1.json").exists()
    assert procs.with_token(tok) == []
