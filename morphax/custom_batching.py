"""`morphax.custom_batching`: functions with user-defined batching rules, mirroring
``jax.custom_batching`` (`custom_vmap`, and `sequential_vmap`, which batches by looping)."""

from morphax._src.higher_order.custom_vmap import custom_vmap, sequential_vmap

__all__ = ["custom_vmap", "sequential_vmap"]
