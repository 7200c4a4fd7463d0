"""`morphax.image`: image resampling, mirroring ``jax.image`` (thin re-export of `morphax._src.image`)."""

from morphax._src.image.scale import ResizeMethod, resize, scale_and_translate  # noqa: F401

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
