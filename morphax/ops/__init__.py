"""`morphax.ops`: segment reductions, mirroring ``jax.ops`` (thin re-export of `morphax._src.ops`)."""

from morphax._src.ops.segments import segment_max, segment_min, segment_prod, segment_sum  # noqa: F401

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
