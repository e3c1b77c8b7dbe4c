#!/bin/sh
# node-problem-detector custom plugin (rendered by `neuron-env k8s-manifests`): runs
# neuron-env installed on the node, in the node's root, and speaks NPD's contract
# (exit 0 OK, 1 problem, other unknown; one short line on stdout).
exec chroot /host @@NEURON_ENV@@ doctor --format npd@@DOCTOR_ARGS@@
