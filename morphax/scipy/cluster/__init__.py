"""`morphax.scipy.cluster`: vector quantization (`vq`), mirroring ``jax.scipy.cluster``."""

from morphax.scipy.cluster import vq  # noqa: F401
