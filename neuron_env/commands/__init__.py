"""One module per command; each returns a Report or a Document and never prints."""

from neuron_env.report.envelope import TOOL

__all__ = ["TOOL"]
