#!/bin/bash
# shellcheck disable=SC2016  # rendered values are quoted literals: they never expand
# neuron-env health check for Slurm (HealthCheckProgram and/or Prolog).
# Rendered by `neuron-env slurm-healthcheck` (neuron-env @@VERSION@@).
# A failing doctor drains this node with a one-line reason (neuron-env runs scontrol itself:
# --slurm-drain); a passing one resumes the node if neuron-env had drained it. Slurm kills a
# health check after 60 s, so doctor runs under a @@TIMEOUT@@ s limit (+5 s to be killed).
# --python: the venv jobs run in (neuron-env's user data and AMI component create
# /opt/neuron-venv), never the `python3` that slurmd's near-empty PATH would find.
# --expect-efa: a Slurm node runs multi-node jobs, so a missing EFA fails (pass
# --doctor-args --no-expect-efa for single-node partitions).
set -u
# slurmd runs health checks with an almost empty environment (no PATH); ParallelCluster keeps
# scontrol in /opt/slurm/bin
export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}:/opt/slurm/bin"
rendered=@@NEURON_ENV@@  # --neuron-env, quoted for the shell
NEURON_ENV="${NEURON_ENV:-$rendered}"
PYTHON=@@PYTHON@@  # --python, quoted for the shell
LIMIT=@@TIMEOUT@@
node="${SLURMD_NODENAME:-$(hostname -s)}"
export SLURMD_NODENAME="$node"

timeout -k 5 "$LIMIT" "$NEURON_ENV" doctor --python "$PYTHON" --format nhc --slurm-drain --expect-efa@@DOCTOR_ARGS@@
rc=$?
# Drain on every exit that did not pass through doctor's drain step. 0 and 1 always did; 3 (an
# error result or a crash) and 4 (a timed-out result or the limit) may have: a node doctor
# drained itself keeps its reason, any other is drained here (a crashing doctor drains).
case "$rc" in
  0|1) ;;  # doctor ran --slurm-drain: it drained or resumed the node
  2) reason="neuron-env: doctor could not run (exit 2: configuration)" ;;
  3) reason="neuron-env: doctor failed (exit 3: an internal error, see its output)" ;;
  4) reason="neuron-env: doctor timed out (exit 4)" ;;
  124|137) reason="neuron-env: doctor timed out after ${LIMIT}s" ;;
  126|127) reason="neuron-env: $NEURON_ENV cannot run (exit $rc)" ;;
  *) reason="neuron-env: doctor ended with exit $rc" ;;
esac
if [ "$rc" -eq 3 ] || [ "$rc" -eq 4 ]; then
  case "$(scontrol show node "$node" -o 2>/dev/null)" in
    *State=*DRAIN*Reason=neuron-env*) reason="" ;;  # drained by doctor's own step
  esac
fi
if [ -n "${reason:-}" ]; then
  echo "ERROR: $reason"
  scontrol update nodename="$node" state=drain reason="$reason" || true
fi
exit "$rc"
