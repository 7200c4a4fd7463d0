"""`morphax.version`: morphax's own version, as ``jax.version`` gives JAX's (`__version__`, the
string; `__version_info__`, its numeric parts as a tuple of ints).

NB: this is morphax's version. Under `morphax.compat`, ``import jax.version`` (and
``jax.__version__``) report the version of JAX's API morphax implements instead, since
libraries read those to choose code paths; `JAX_API_VERSION` here names it as well."""

from __future__ import annotations

from morphax._src.version import JAX_API_VERSION, JAX_API_VERSION_INFO, __version__, __version_info__

__all__ = ["JAX_API_VERSION", "JAX_API_VERSION_INFO", "__version__", "__version_info__"]


_version = __version__
