"""`morphax.scipy`: SciPy's API on morphax arrays, mirroring ``jax.scipy`` (so far `special`)."""

from morphax.scipy import (  # noqa: F401
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    signal,
    sparse,
    spatial,
    special,
    stats,
)
