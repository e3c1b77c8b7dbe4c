"""Engine adapters (Slurm, node-problem-detector, Prometheus, SSM Run Command) and the one
aggregation of doctor reports across a fleet, whatever engine gathered them."""
