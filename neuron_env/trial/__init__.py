"""`neuron-env trial`: the user's model on the device vs a CPU reference (runner, advice, views)."""
