"""The checkify interpreter: evaluate a jaxpr equation by equation on the current trace, threading
an `Error` through it. Each primitive with something to check has a rule in `error_checks`
(keyed by the Primitive object, registered next to its checks: automatic.py, control_flow.py and
the `check` primitive's discharge below); every other equation is bound unchanged.

Sub-jaxprs of higher-order primitives are checkified into jaxprs that take and return the error's
leaves (`checkify_subjaxpr`), memoized on the jaxpr so a body checkified again is the same jaxpr
and keeps its compiled executables.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from morphax._src.checkify.errors import Error, ErrorEffect, update_error
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import ClosedJaxpr, interpret
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Primitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.higher_order.checks import check_p
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["checkify_jaxpr", "checkify_subjaxpr", "error_checks", "error_leaf_avals", "placeholder_error"]

# rule(error, enabled_errors, *operands, **params) -> (error, outputs), outputs as bind returns them.
ErrorCheckRule = Callable
error_checks: dict[Primitive, ErrorCheckRule] = {}


def _as_value(x, aval):
    # Literal outputs come back as arrays of their declared type.
    if isinstance(x, Tracer) or is_concrete_array(x):
        return x
    return make_array(x, aval.dtype, weak_type=aval.weak_type)


def checkify_jaxpr(closed: ClosedJaxpr, enabled: frozenset, error: Error, *args):
    """Evaluate `closed` on `args` on the current trace, with checks; returns (error, outputs)."""
    state = [error]

    def run_eqn(eqn, ins):
        rule = error_checks.get(eqn.primitive)
        if rule is None:
            return eqn.primitive.bind(*ins, **eqn.params)
        state[0], out = rule(state[0], enabled, *ins, **eqn.params)
        return out

    outs = interpret(closed.jaxpr, closed.consts, args, run_eqn)
    return state[0], [_as_value(x, v.aval) for x, v in zip(outs, closed.jaxpr.outvars)]


def error_leaf_avals(effects) -> list[ShapedArray]:
    """The avals of an error's leaves with these (sorted) effects: flag, code, payload each."""
    avals = []
    for e in effects:
        avals.append(ShapedArray((), np.dtype(bool)))
        avals.append(ShapedArray((), np.dtype(np.int32)))
        avals.extend(ShapedArray(tuple(s), np.dtype(d)) for s, d in e.shape_dtypes)
    return avals


def placeholder_error(effects) -> Error:
    """An error with a never-set slot for each effect (no metadata): the type of `effects`."""
    return Error({}, {}, {}, {})._add_placeholder_effects(effects)


def checkify_subjaxpr(closed: ClosedJaxpr, enabled: frozenset, in_effects: tuple, n_before: int = 0):
    """`closed` checkified: a jaxpr taking its first `n_before` inputs, then the leaves of an error
    with `in_effects` (sorted), then its other inputs, and returning the out error's leaves then
    its outputs. Returns (jaxpr, out_effects, metadata of the checks it holds)."""
    key = ("checkify", enabled, in_effects, n_before)
    return memoized(closed, key, lambda: _build_subjaxpr(closed, enabled, in_effects, n_before))


def _build_subjaxpr(closed, enabled, in_effects, n_before):
    err_avals = error_leaf_avals(in_effects)
    n_err = len(err_avals)
    in_tree = pytree.tree_structure(placeholder_error(in_effects))
    box = {}

    def fun(*xs):
        before, err_leaves, after = xs[:n_before], xs[n_before : n_before + n_err], xs[n_before + n_err :]
        error = pytree.tree_unflatten(in_tree, err_leaves)
        error, outs = checkify_jaxpr(closed, enabled, error, *before, *after)
        box["effects"] = error.effects()
        box["metadata"] = dict(error._metadata)
        return [*pytree.tree_leaves(error), *outs]

    avals = list(closed.in_avals)
    jaxpr = trace_to_jaxpr(fun, avals[:n_before] + err_avals + avals[n_before:])
    return jaxpr, box["effects"], box["metadata"]


def error_from_leaves(effects, metadata: dict, leaves) -> Error:
    """The error with these effects whose leaves are `leaves` (a sub-call's error outputs)."""
    tree = pytree.tree_structure(placeholder_error(effects)._replace_metadata(metadata))
    return pytree.tree_unflatten(tree, list(leaves))


def merged_effects(error: Error, *effect_sets) -> tuple:
    """The sorted union of `error`'s effects and those of `effect_sets`."""
    union = set(error._pred)
    for s in effect_sets:
        union.update(s)
    return tuple(sorted(union, key=ErrorEffect.sort_key))


# ------------------------------------------------------------------------- discharging `check`


def _discharge_check(error, enabled, *leaves, err_tree, debug):
    # The checked error joins the threaded one; kinds not enabled are dropped (as JAX does: it
    # does not re-raise them either).
    new = pytree.tree_unflatten(err_tree, leaves)
    for effect in new.effects():
        if effect.error_type in enabled:
            error = update_error(
                error, new._pred[effect], new._code[effect], {}, new._payload[effect], effect
            )
    return error._replace_metadata({**new._metadata, **error._metadata}), []


error_checks[check_p] = _discharge_check
