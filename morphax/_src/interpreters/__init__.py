"""The rule tables and trace types of morphax's transformations under JAX's names: `ad` (JVP and
transpose rules), `batching` (vmap rules), `partial_eval` (staging and partial evaluation) and
`mlir` (lowerings, here Python functions morphax runs as a primitive's implementation).
`morphax.interpreters` (`jax.interpreters`) re-exports them, and `morphax.compat` answers JAX's
private `jax._src.interpreters.<name>` with these modules, as libraries import both."""
