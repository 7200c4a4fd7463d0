"""`morphax.scipy.integrate`: ``trapezoid``, mirroring ``jax.scipy.integrate``."""

from morphax.numpy import trapezoid  # noqa: F401

__all__ = ["trapezoid"]
