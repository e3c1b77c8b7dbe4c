#!/bin/sh
# node-problem-detector custom plugin (rendered by `neuron-env k8s-manifests`): runs
# neuron-env installed on the node, in the node's root (mounted read-only), and speaks NPD's
# contract (exit 0 OK, 1 problem, other unknown; one short line on stdout). The node-level
# profile only: the Python side lives in pod images (docs/fleet.md, "Pod-level check").
exec chroot /host @@NEURON_ENV@@ doctor --format npd --only @@ONLY@@@@DOCTOR_ARGS@@
