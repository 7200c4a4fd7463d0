"""`morphax.flatten_util`: ``ravel_pytree``, mirroring ``jax.flatten_util``."""

from morphax._src.flatten_util import ravel_pytree  # noqa: F401

__all__ = ["ravel_pytree"]
