"""`morphax.interpreters` (`jax.interpreters`): the rule tables and trace types of morphax's
transformations under JAX's names: `ad` (JVP and transpose rules), `batching` (vmap rules),
`partial_eval` (staging and partial evaluation) and `mlir` (lowerings, here Python functions
morphax runs as a primitive's implementation)."""

from morphax.interpreters import ad, batching, mlir, partial_eval

__all__ = ["ad", "batching", "mlir", "partial_eval"]
