"""A real one-node Slurm cluster on loopback for tests: munged on a private socket, slurmctld and
slurmd with a config written under a temporary directory. `SlurmCluster.start()` waits until
`sinfo` shows the node idle; `stop()` ends exactly the daemons it started."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "scontrol", "sinfo", "srun")


def missing() -> list[str]:
    return [d for d in DAEMONS if shutil.which(d) is None]


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _hardware() -> tuple[int, int]:
    """CPUs and RealMemory as slurmd itself counts them (`slurmd -C`)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30).stdout
    cpus = int(re.search(r"CPUs=(\d+)", out).group(1))
    mem = int(re.search(r"RealMemory=(\d+)", out).group(1))
    return cpus, mem


CONF = """ClusterName=neuronenvtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
HealthCheckProgram={d}/healthcheck.sh
HealthCheckInterval={interval}
HealthCheckNodeState=ANY
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    def __init__(self, base: Path, health_interval: int = 5) -> None:
        self.dir = base
        self.interval = health_interval
        self.health_check = base / "healthcheck.sh"  # what slurmd runs every `interval` s
        self.node = socket.gethostname().split(".")[0]
        self.conf = base / "slurm.conf"
        self.munge_socket = base / "munge/munge.socket"
        self.procs: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def _write(self) -> None:
        for sub in ("state", "spool", "munge"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir / "munge", 0o700)
        key = self.dir / "munge/munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        cpus, mem = _hardware()
        self.conf.write_text(CONF.format(
            ctld_port=_free_port(), slurmd_port=_free_port(), munge_socket=self.munge_socket,
            d=self.dir, node=self.node, cpus=cpus, mem=mem, interval=self.interval))
        self.set_health_check("#!/bin/sh\nexit 0\n")

    def set_health_check(self, script: str) -> None:
        """Replace the HealthCheckProgram atomically (slurmd may be running it)."""
        tmp = self.health_check.with_suffix(".tmp")
        tmp.write_text(script)
        tmp.chmod(0o755)
        os.replace(tmp, self.health_check)

    def _spawn(self, argv: list[str]) -> None:
        log = open(self.dir / f"{Path(argv[0]).name}.out", "wb")  # noqa: SIM115
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                           env=self.env, start_new_session=True))

    def start(self, timeout: float = 60) -> SlurmCluster:
        self._write()
        m = self.dir / "munge"
        self._spawn(["munged", "-F", "--force", f"--socket={self.munge_socket}",
                     f"--key-file={m}/munge.key", f"--pid-file={m}/munged.pid",
                     f"--log-file={m}/munged.log", f"--seed-file={m}/munged.seed"])
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged")
        self._spawn(["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self.run("scontrol", "ping").returncode == 0, timeout, "slurmctld")
        self._spawn(["slurmd", "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(lambda: self.state() == "idle", timeout, "slurmd (node idle)")
        return self

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start ({', '.join(dead) or 'timeout'}); "
                                   f"logs in {self.dir}")
            time.sleep(0.3)

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env,
                              timeout=timeout)

    def wait_for(self, state: str, timeout: float = 60) -> str:
        """Poll sinfo until the node's state is `state`; returns the last state seen."""
        deadline = time.monotonic() + timeout
        while (now := self.state()) != state and time.monotonic() < deadline:
            time.sleep(0.5)
        return now

    def state(self) -> str:
        """The node's state as sinfo prints it (idle, drain, drng, ...)."""
        return self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%t").stdout.strip()

    def reason(self) -> str:
        return self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%E").stdout.strip()

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
