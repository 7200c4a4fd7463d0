"""`morphax.experimental` (JAX's `jax.experimental`): APIs that JAX marks experimental. Submodules
are imported on use (`from morphax.experimental import checkify`)."""

from morphax._src.higher_order.io_callbacks import io_callback

__all__ = ["io_callback"]
