"""The package version (pyproject.toml states the same number; a test keeps them equal)."""

__version__ = "0.1.0"
