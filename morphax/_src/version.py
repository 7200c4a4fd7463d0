"""The package version (pyproject.toml states the same number; a test keeps them equal), and the
version of JAX's API morphax implements (what `jax.__version__` reports under `morphax.compat`)."""

import re

__version__ = "0.1.0"


def version_as_tuple(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: "0.1.0" -> (0, 1, 0); local or pre-release
    suffixes ("0.2.0.dev20260101+abc") stop at the first part that is not a number."""
    parts = []
    for part in version.split("+")[0].split("."):
        if not re.fullmatch(r"\d+", part):
            break
        parts.append(int(part))
    return tuple(parts)


__version_info__ = version_as_tuple(__version__)

# The JAX release whose public API morphax follows: libraries that read `jax.__version__` or
# `jax.__version_info__` to pick a code path see this one under `morphax.compat`.
JAX_API_VERSION = "0.10.2"
JAX_API_VERSION_INFO = version_as_tuple(JAX_API_VERSION)
