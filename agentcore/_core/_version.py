"""The package version, kept where setuptools can read it without importing agentcore."""

__version__ = "0.1.0"
