"""Synchronous host evaluation of a closed jaxpr on NumPy arrays, for the eager loops of
control-flow primitives. Each jaxpr is turned into a plan once (cached) and then run per
iteration by calling the primitives' NumPy references directly.

Why not `pjit_p.bind` per iteration: inside a compiled function the loop runs on the device
stream's worker thread, and a pjit call from there queues work on that same stream and waits
for it, which never finishes. Nothing here dispatches: it runs on the calling thread.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core.jaxpr import ClosedJaxpr, Literal
from morphax._src.core.memo import MISSING, memo_get, memo_put
from morphax._src.core.values import make_array

__all__ = ["host_rules", "run_closed_jaxpr", "run_host_rule"]

# Higher-order primitives that can run their loop on host values register
# ``fn(np_args, **params) -> list of np arrays`` here (scan does); others are bound on Arrays.
host_rules: dict = {}


def _as_dtype(x, dt):
    return x if type(x) is np.ndarray and x.dtype == dt else np.asarray(x, dtype=dt)


def _step_fn(eqn):
    prim, params = eqn.primitive, eqn.params
    if prim.call_jaxpr_param is not None:  # jit, checkpoint, custom-rule calls: run the body inline
        inner = params[prim.call_jaxpr_param]
        return lambda *a: run_closed_jaxpr(inner, a)
    rule = host_rules.get(prim)
    if rule is not None:
        return lambda *a: rule(a, **params)
    if prim.higher_order:
        in_avals = [v.aval for v in eqn.invars]

        def bound(*a):
            arrays = [make_array(x, dtype=av.dtype, weak_type=av.weak_type) for x, av in zip(a, in_avals)]
            out = prim.bind(*arrays, **params)
            return [np.asarray(o) for o in (out if prim.multiple_results else [out])]

        return bound
    impl = prim.impl
    if prim.multiple_results:
        return lambda *a: impl(*a, **params)
    return lambda *a: (impl(*a, **params),)


def _plan(closed: ClosedJaxpr):
    hit = memo_get(closed, "host_plan")
    if hit is not MISSING:
        return hit
    jaxpr = closed.jaxpr
    consts = [(id(v), _as_dtype(c, v.aval.dtype)) for v, c in zip(jaxpr.constvars, closed.consts)]
    steps = []
    for eqn in jaxpr.eqns:
        ins = [
            (True, _as_dtype(v.val, v.aval.dtype)) if type(v) is Literal else (False, id(v))
            for v in eqn.invars
        ]
        outs = [(id(v), v.aval.dtype) for v in eqn.outvars]
        steps.append((_step_fn(eqn), ins, outs))
    outvars = [
        (True, _as_dtype(v.val, v.aval.dtype)) if type(v) is Literal else (False, id(v))
        for v in jaxpr.outvars
    ]
    plan = (consts, [id(v) for v in jaxpr.invars], steps, outvars)
    return memo_put(closed, "host_plan", plan)


def run_closed_jaxpr(closed: ClosedJaxpr, args) -> list:
    """Evaluate `closed` on NumPy arrays (of its input types); returns NumPy arrays."""
    consts, invars, steps, outvars = _plan(closed)
    env = dict(consts)
    for v, a in zip(invars, args):
        env[v] = a
    for fn, ins, outs in steps:
        res = fn(*[ref if lit else env[ref] for lit, ref in ins])
        for (o, dt), r in zip(outs, res):
            env[o] = _as_dtype(r, dt)
    return [ref if lit else env[ref] for lit, ref in outvars]


def run_host_rule(rule, args, in_avals, out_avals, params) -> list:
    """A loop primitive's eager impl: its host rule on NumPy values of `in_avals`' dtypes, the
    results returned as Arrays of `out_avals`' types."""
    vals = [np.asarray(x, dtype=a.dtype) for x, a in zip(args, in_avals)]
    with np.errstate(all="ignore"):  # float edge cases are not errors (JAX is silent)
        outs = rule(vals, **params)
    return [make_array(o, dtype=a.dtype, weak_type=a.weak_type) for o, a in zip(outs, out_avals)]
