"""Constant folding: equations whose inputs are all literals or small concrete constants are run
now with the primitive's NumPy `impl` and replaced by a constvar (a literal when scalar).

Higher-order, side-effecting and collective primitives are never folded; their closed jaxprs are
folded inside. Folding never raises: an `impl` that fails just leaves the equation in place.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Literal
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.passes._util import (
    PassResult,
    eqn_has_effects,
    finish,
    map_closed_params,
    subst_all,
    with_invars,
)

__all__ = ["FOLD_SIZE_LIMIT", "fold_constants", "run_constant_folding"]

# Largest input or output (in elements) folded: bigger constants cost more memory in the jaxpr
# than they save in compute.
FOLD_SIZE_LIMIT = 100_000


def _concrete(c, aval):
    """The NumPy value of a constant, or None if it is not concrete (a tracer) or too big."""
    if isinstance(c, Tracer) or math.prod(aval.shape) > FOLD_SIZE_LIMIT:
        return None
    try:
        val = np.asarray(c)
    except Exception:
        return None
    if val.shape != aval.shape:
        return None
    return val if val.dtype == aval.dtype else val.astype(aval.dtype)


def _content_key(val: np.ndarray, aval):
    # Raw bytes, so -0.0 and 0.0 differ and equal NaNs match; the aval carries the weak type.
    return (aval, val.tobytes())


def _foldable(eqn) -> bool:
    prim = eqn.primitive
    return (
        prim.impl is not None
        and not prim.higher_order
        and prim.named_axes_param is None  # collectives need the vmap axis they run under
        and not eqn_has_effects(eqn)
        and all(math.prod(v.aval.shape) <= FOLD_SIZE_LIMIT for v in eqn.outvars)
    )


def _evaluate(eqn, vals):
    """Run `impl` on NumPy inputs; the outputs cast to the recorded types, or None on failure."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = eqn.primitive.impl(*vals, **eqn.params)
        outs = list(out) if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            return None
        res = []
        for o, v in zip(outs, eqn.outvars):
            a = np.asarray(o)
            if a.shape != v.aval.shape:
                return None
            res.append(a if a.dtype == v.aval.dtype else a.astype(v.aval.dtype))
        return res
    except Exception:  # a reference that can't run on these values: keep the equation
        return None


def run_constant_folding(closed: ClosedJaxpr, _memo: dict | None = None) -> PassResult:
    memo = {} if _memo is None else _memo
    jaxpr = closed.jaxpr
    known: dict[int, np.ndarray] = {}
    # Folded values equal to an existing constant reuse its var (CSE only matches const objects).
    by_content: dict = {}
    for v, c in zip(jaxpr.constvars, closed.consts):
        val = _concrete(c, v.aval)
        if val is not None:
            known[id(v)] = val
            by_content.setdefault(_content_key(val, v.aval), v)
    constvars, consts = list(jaxpr.constvars), list(closed.consts)
    env: dict = {}
    eqns = []
    removed = 0
    for eqn in jaxpr.eqns:
        eqn = with_invars(eqn, env)
        if all(type(v) is Literal or id(v) in known for v in eqn.invars) and _foldable(eqn):
            vals = [_concrete(v.val, v.aval) if type(v) is Literal else known[id(v)] for v in eqn.invars]
            outs = None if any(x is None for x in vals) else _evaluate(eqn, vals)
            if outs is not None:
                for v, o in zip(eqn.outvars, outs):
                    if isinstance(v, DropVar):
                        continue
                    key = _content_key(o, v.aval)
                    if key in by_content:
                        env[id(v)] = by_content[key]
                        continue
                    # An Array keeps the weak type, so evaluating the jaxpr still types as before.
                    arr = make_array(o, dtype=v.aval.dtype, weak_type=v.aval.weak_type)
                    if v.aval.shape == ():
                        env[id(v)] = Literal(arr, v.aval)
                    else:
                        # The equation's own output var becomes the constvar: no rewiring needed.
                        constvars.append(v)
                        consts.append(arr)
                        known[id(v)] = o
                        by_content[key] = v
                removed += 1
                continue
        eqn, inner_removed = map_closed_params(eqn, lambda c: run_constant_folding(c, memo), memo)
        removed += inner_removed
        eqns.append(eqn)
    outvars = subst_all(env, jaxpr.outvars)
    return finish(closed, constvars, consts, eqns, outvars, removed)


def fold_constants(closed: ClosedJaxpr) -> ClosedJaxpr:
    return run_constant_folding(closed).closed
