"""`morphax.scipy`: SciPy's API on morphax arrays, mirroring ``jax.scipy`` (so far `special`)."""

from morphax.scipy import linalg, special, stats  # noqa: F401
