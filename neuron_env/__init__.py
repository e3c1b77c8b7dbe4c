"""neuron-env: check, install and smoke-test the AWS Neuron PyTorch backend."""

__version__ = "0.1.0"
