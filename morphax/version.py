"""`morphax.version`: morphax's own version, as ``jax.version`` gives JAX's (`__version__`, the
string; `__version_info__`, its numeric parts as a tuple of ints).

NB: this is morphax's version. Under `morphax.compat`, ``import jax.version`` (and
``jax.__version__``) report the version of JAX's API morphax implements instead, since
libraries read those to choose code paths; `JAX_API_VERSION` here names it as well."""

from __future__ import annotations

import re

from morphax._src.version import JAX_API_VERSION, JAX_API_VERSION_INFO, __version__

__all__ = ["JAX_API_VERSION", "JAX_API_VERSION_INFO", "__version__", "__version_info__"]


def _version_as_tuple(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: "0.1.0" -> (0, 1, 0); local or pre-release
    suffixes ("0.2.0.dev20260101+abc") stop at the first part that is not a number."""
    parts = []
    for part in version.split("+")[0].split("."):
        if not re.fullmatch(r"\d+", part):
            break
        parts.append(int(part))
    return tuple(parts)


__version_info__ = _version_as_tuple(__version__)
_version = __version__
