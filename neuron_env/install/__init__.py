"""`neuron-env install`: a pure plan, then execution (resolve, provenance, install, verify)."""
