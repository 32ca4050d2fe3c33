"""velesmem: a local-first, explainable memory daemon for AI agents."""

__version__ = "0.1.0"
