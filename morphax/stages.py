"""`morphax.stages`: the stages of `jit` (traced, lowered, compiled), mirroring ``jax.stages``."""

from morphax._src.api.stages import ArgInfo, Compiled, CompilerOptions, Lowered, Traced, Wrapped  # noqa: F401

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
