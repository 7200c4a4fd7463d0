"""`morphax.interpreters.mlir` (`jax.interpreters.mlir`): lowerings of user primitives.

morphax compiles no MLIR. A lowering registered here is a Python function that morphax runs as
the primitive's implementation, eagerly and inside compiled programs: ``register_lowering(p,
lower_fun(f, multiple_results=...))`` makes ``f(*operands, **params)`` compute `p`, and a rule
``rule(ctx, *operands, **params)`` is called with a `LoweringRuleContext` (the primitive and its
operand/result types) and arrays as operands.
"""

from __future__ import annotations

from morphax._src.extend.primitives import LoweringRuleContext, lower_fun, register_lowering

LoweringRule = object  # the type of a lowering rule: a callable


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, **kwargs):
    """Call `callback` on the host with `operands` (morphax lowerings already run on the host):
    returns ``(results, token, keepalive)`` as JAX does."""
    results = callback(*operands)
    return list(results), token, None


__all__ = [
    "LoweringRule",
    "LoweringRuleContext",
    "emit_python_callback",
    "lower_fun",
    "register_lowering",
]
