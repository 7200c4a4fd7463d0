"""`morphax.interpreters.mlir` (`jax.interpreters.mlir`): lowerings of user primitives.

morphax compiles no MLIR. A lowering registered here is a Python function that morphax runs as
the primitive's implementation, eagerly and inside compiled programs: ``register_lowering(p,
lower_fun(f, multiple_results=...))`` makes ``f(*operands, **params)`` compute `p`, and a rule
``rule(ctx, *operands, **params)`` is called with a `LoweringRuleContext` (the primitive and its
operand/result types) and arrays as operands.
"""

from __future__ import annotations

from morphax._src.api.debugging import pure_callback
from morphax._src.api.tracing import ShapeDtypeStruct
from morphax._src.extend.primitives import LoweringRuleContext, lower_fun, register_lowering
from morphax._src.higher_order.io_callbacks import io_callback

LoweringRule = object  # the type of a lowering rule: a callable


def emit_python_callback(
    ctx, callback, token, operands, operand_avals, result_avals, *, has_side_effect=False, **kwargs
):
    """`callback` called on the host when the program runs, as JAX emits it: a pure_callback of
    the operands (an io_callback with `has_side_effect`) whose results have `result_avals`. A
    lowering traced into a compiled program (a user primitive's `lowered_jaxpr`) so calls it once
    per execution, not once per tracing (equinox's noinline runs its jitted function there); a
    lowering run as an implementation calls it at once. Returns ``(results, token, keepalive)``."""
    declared = [ShapeDtypeStruct(a.shape, a.dtype) for a in result_avals]
    if has_side_effect:
        results = io_callback(callback, declared, *operands)
    else:
        results = pure_callback(callback, declared, *operands, vmap_method="sequential")
    return list(results), token, None


__all__ = [
    "LoweringRule",
    "LoweringRuleContext",
    "emit_python_callback",
    "lower_fun",
    "register_lowering",
]
