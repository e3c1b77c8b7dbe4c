"""One module per command; each returns a Report (or text) and never prints."""

from neuron_env import __version__

TOOL = {"name": "neuron-env", "version": __version__}
