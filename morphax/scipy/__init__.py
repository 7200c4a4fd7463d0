"""`morphax.scipy`: SciPy's API on morphax arrays, mirroring ``jax.scipy`` (so far `special`)."""

from morphax.scipy import cluster, fft, integrate, linalg, ndimage, signal, special, stats  # noqa: F401
