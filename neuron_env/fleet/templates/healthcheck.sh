#!/bin/bash
# neuron-env health check for Slurm (HealthCheckProgram and/or Prolog).
# Rendered by `neuron-env slurm-healthcheck` (neuron-env @@VERSION@@).
# A failing doctor drains this node with a one-line reason (neuron-env runs scontrol itself:
# --slurm-drain); a passing one resumes the node if neuron-env had drained it. Slurm kills a
# health check after 60 s, so doctor runs under a @@TIMEOUT@@ s limit (+5 s to be killed).
# --expect-efa: a Slurm node runs multi-node jobs, so a missing EFA fails (pass
# --doctor-args --no-expect-efa for single-node partitions).
set -u
# slurmd runs health checks with an almost empty environment (no PATH); ParallelCluster keeps
# scontrol in /opt/slurm/bin
export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}:/opt/slurm/bin"
NEURON_ENV="${NEURON_ENV:-@@NEURON_ENV@@}"
LIMIT=@@TIMEOUT@@
node="${SLURMD_NODENAME:-$(hostname -s)}"
export SLURMD_NODENAME="$node"

timeout -k 5 "$LIMIT" "$NEURON_ENV" doctor --format nhc --slurm-drain --expect-efa@@DOCTOR_ARGS@@
rc=$?
case "$rc" in
  0|1|3|4) ;;  # doctor ran: --slurm-drain already drained or resumed the node
  2) reason="neuron-env: doctor could not run (exit 2: configuration)" ;;
  124|137) reason="neuron-env: doctor timed out after ${LIMIT}s" ;;
  126|127) reason="neuron-env: $NEURON_ENV cannot run (exit $rc)" ;;
  *) reason="neuron-env: doctor ended with exit $rc" ;;
esac
if [ -n "${reason:-}" ]; then
  echo "ERROR: $reason"
  scontrol update nodename="$node" state=drain reason="$reason" || true
fi
exit "$rc"
