"""The package version (pyproject.toml states the same number; a test keeps them equal), and the
version of JAX's API morphax implements (what `jax.__version__` reports under `morphax.compat`)."""

__version__ = "0.1.0"

# The JAX release whose public API morphax follows: libraries that read `jax.__version__` or
# `jax.__version_info__` to pick a code path see this one under `morphax.compat`.
JAX_API_VERSION = "0.10.2"
JAX_API_VERSION_INFO = tuple(int(part) for part in JAX_API_VERSION.split("."))
