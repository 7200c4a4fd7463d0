"""JAX's semi-public extension surface (`jax.core`, `jax.extend`, `jax.interpreters`) on morphax.

Libraries written for JAX (equinox, flax, chex, ...) define primitives with JAX's conventions,
register rules in JAX's tables and inspect traces through JAX's names. The modules here adapt
those conventions onto morphax's own primitives, traces and jaxprs:

- `primitives`: `Primitive` with JAX's rule conventions, the rule tables (`primitive_jvps`,
  `primitive_transposes`, the batcher tables) and Python lowerings (`register_lowering`,
  `lower_fun`), each writing the slots of morphax's `core.primitive.Primitive`;
- `linear_util`: `WrappedFun` and its transformations (`jax.extend.linear_util`);
- `backends`: the backend clients `jax.extend.backend` describes;
- `tracing`: trace inspection (`find_top_trace`, `get_opaque_trace_state`), aval helpers
  (`mapped_aval`, `concrete_or_error`, ...) and partial evaluation with JAX's `PartialVal`.

The public modules `morphax.core`, `morphax.extend.*` and `morphax.interpreters.*` re-export them.
"""
