"""The version matrix: typed model, loader/validator, resolver and manifest importer."""

from neuron_env.matrix.model import (
    Companion,
    Index,
    InstanceFamily,
    InstanceType,
    Matrix,
    OSEntry,
    Pair,
)

__all__ = ["Companion", "Index", "InstanceFamily", "InstanceType", "Matrix", "OSEntry", "Pair"]
