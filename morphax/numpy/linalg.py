"""`morphax.numpy.linalg`: NumPy's linear algebra, mirroring ``jax.numpy.linalg`` (thin re-export
of `morphax._src.numpy.linalg`)."""

from morphax._src.numpy.linalg import *  # noqa: F401,F403
