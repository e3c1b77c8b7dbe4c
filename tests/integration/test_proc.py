"""THE subprocess funnel (neuron_env/guards/proc.py) against real processes: a timeout that holds
when a grandchild keeps the pipe, bounded memory on huge output, children that die with us."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuron_env.guards import proc

pytestmark = pytest.mark.integration

# the child double-forks: the grandchild leaves the process group (setsid) and keeps stdout
ESCAPED_GRANDCHILD = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(60)
    os._exit(0)
print("child here", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in state


def _wait_for(path: Path, limit: float = 20.0) -> str:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("child_sleep", [60, 0])
def test_a_grandchild_holding_the_pipe_cannot_hold_the_timeout(tmp_path, child_sleep):
    pidfile = tmp_path / "grandchild.pid"
    res = proc.run([sys.executable, "-c", ESCAPED_GRANDCHILD, str(pidfile), str(child_sleep)],
                   timeout=2)
    grandchild = int(_wait_for(pidfile))
    try:
        # without the deadline on the pipes this waits for the grandchild (60 s)
        assert res.elapsed < 2 + proc.GRACE + 5
        assert "child here" in res.stdout
        assert res.timed_out is (child_sleep == 60)
        assert res.returncode == (None if child_sleep else 0)
    finally:
        os.kill(grandchild, signal.SIGKILL)


@pytest.mark.timeout(60)
def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    script = (f"sleep 60 & echo $! > {pidfile}; wait")
    res = proc.run(["sh", "-c", script], timeout=3)
    assert res.timed_out and res.returncode is None
    sleeper = int(_wait_for(pidfile))
    end = time.monotonic() + 10  # SIGKILL is delivered asynchronously: allow for a loaded host
    while not _gone(sleeper) and time.monotonic() < end:
        time.sleep(0.05)
    assert _gone(sleeper)


MEASURE = """
import json, sys
from neuron_env.guards import proc
gen = [sys.executable, "-c", "import sys\\nb = b'x' * 1048575 + b'\\\\n'\\n"
       "for _ in range(300): sys.stdout.buffer.write(b)"]
if sys.argv[1] == "capture":
    r = proc.run(gen, timeout=120)
    got = len(r.stdout)
else:
    n = [0]
    r = proc.stream(gen, timeout=120, sink=lambda b: n.__setitem__(0, n[0] + len(b)))
    got = n[0]
# VmHWM is this image's own peak: ru_maxrss would also count the parent (pytest) image this
# process was forked from, since Linux keeps the high-water mark across exec
hwm = next(int(line.split()[1]) for line in open("/proc/self/status")
           if line.startswith("VmHWM:"))  # KiB
print(json.dumps({"rss_mib": hwm / 1024, "got": got, "ok": r.ok, "truncated": r.truncated,
                  "head": r.stdout[:60], "kept": len(r.stdout)}))
"""


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", ["capture", "stream"])
def test_300_mb_of_output_keeps_memory_bounded(mode):
    import json

    p = subprocess.run([sys.executable, "-c", MEASURE, mode], capture_output=True, text=True,
                       timeout=200)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] and doc["truncated"]
    assert doc["rss_mib"] < 120, doc  # 300 MiB passed through; a few MiB kept
    assert doc["kept"] <= proc.MAX_OUTPUT + 100
    assert doc["head"].startswith("[neuron-env: ") and "bytes of output cut]" in doc["head"]
    if mode == "stream":
        assert doc["got"] == 300 * 1048576  # the sink (the log) saw every byte


PARENT = """
import sys
from neuron_env.guards import proc
proc.run(["sh", "-c", "echo $$ > " + sys.argv[1] + "; exec sleep 60"], timeout=120)
"""


@pytest.mark.timeout(60)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_dies_when_neuron_env_is_killed(tmp_path):
    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pidfile)])
    child = int(_wait_for(pidfile))
    assert not _gone(child)
    parent.kill()  # SIGKILL: no cleanup code of ours runs
    parent.wait(timeout=10)
    end = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < end:
        time.sleep(0.05)
    assert _gone(child)


def test_capture_mode_basics(tmp_path):
    r = proc.run([sys.executable, "-c", "import sys; print(sys.stdin.read().upper()); "
                  "sys.stderr.write('e'); sys.exit(3)"], timeout=30, input="hi")
    assert (r.returncode, r.stdout.strip(), r.stderr, r.ok) == (3, "HI", "e", False)
    missing = proc.run([str(tmp_path / "nope")], timeout=5)
    assert missing.error == "not found" and missing.returncode is None


@pytest.mark.timeout(60)
def test_a_child_collected_after_its_deadline_keeps_what_it_wrote():
    """A supervisor that only polls (collectives' ranks) collects after the deadline: what the
    child wrote before it was killed is still there (it names the step that hung)."""
    r = proc.spawn([sys.executable, "-c", "import sys, time\nprint('last words', flush=True)\n"
                    "sys.stderr.write('@@STEP x@@\\n'); sys.stderr.flush(); time.sleep(60)"],
                   timeout=2)
    time.sleep(3)  # nobody reads meanwhile
    res = r.result()
    assert res.timed_out and "last words" in res.stdout and "@@STEP x@@" in res.stderr


@pytest.mark.timeout(60)
def test_polling_keeps_the_pipes_flowing():
    """1 MiB on stderr fills the pipe (64 KiB): a supervisor that polls without reading would
    leave the child blocked in write() until the deadline."""
    r = proc.spawn([sys.executable, "-c", "import sys; sys.stderr.write('x' * (1 << 20))"],
                   timeout=30)
    end = time.monotonic() + 20
    while r.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    res = r.result()
    assert res.returncode == 0 and not res.timed_out and len(res.stderr) == 1 << 20


WAITS_FOR_THE_WATCHER = """
import os, sys, time

def wait_for(path):
    end = time.monotonic() + 20
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit(3)
        time.sleep(0.05)

sys.stdout.write("OUT\\n"); sys.stdout.flush()
sys.stderr.write("@@STEP one@@\\n"); sys.stderr.flush()
wait_for(sys.argv[1])  # the watcher has seen step one
sys.stderr.write("@@STEP two@@\\n"); sys.stderr.flush()
wait_for(sys.argv[2])  # and ticked since
"""


def test_watch_follows_stderr_while_the_child_runs(tmp_path):
    """The child goes on only once the watcher has seen its line (then ticked): a watcher fed
    after the fact would leave it waiting (exit 3)."""
    seen_one, ticked, seen, ticks = tmp_path / "seen", tmp_path / "ticked", [], []

    def sink(data: bytes) -> None:
        seen.append(data)
        if b"@@STEP one@@" in b"".join(seen):
            seen_one.touch()

    def tick(elapsed: float) -> None:
        ticks.append(elapsed)
        if b"@@STEP two@@" in b"".join(seen):
            ticked.touch()

    running = proc.spawn([sys.executable, "-c", WAITS_FOR_THE_WATCHER, str(seen_one),
                          str(ticked)], timeout=60)
    running.watch(sink, tick)
    r = running.result()
    assert r.returncode == 0, r.stderr
    assert b"".join(seen) == b"@@STEP one@@\n@@STEP two@@\n"  # stderr only, whole
    assert r.stdout == "OUT\n" and r.stderr == "@@STEP one@@\n@@STEP two@@\n"
    assert ticks == sorted(ticks)
