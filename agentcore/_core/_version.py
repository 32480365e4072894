"""The package version, kept where setuptools can read it without importing agentcore."""

__version__ = "0.1.0"
"""agentcore's version (PEP 440), as `pip` and the package metadata know it."""
