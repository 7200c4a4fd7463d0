"""Typed keys down to their words, before any backend sees a program.

A jaxpr may hold values of aval ``key<fry>[*shape]`` and the ``random_*`` primitives on them
(prims/random_keys.py). No backend knows either: `physicalize` rewrites such a jaxpr into one on
the keys' ``uint32[*shape, 2]`` words, each ``random_*`` equation expanded into its Threefry
implementation and each layout equation on keys (slice, reshape, select_n, ...) into the same
primitive on the words; control flow and calls have their bodies rewritten the same way. The
eager operations on concrete keys (runtime/eager.py) run `physical_apply` on one equation.
"""

from __future__ import annotations

import math
import threading

from morphax._src.config import config
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import AxisData
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, eval_jaxpr, sub_jaxprs
from morphax._src.core.memo import memoized
from morphax._src.core.structural import broadcast_in_dim_p, reshape_p
from morphax._src.prims import random_keys as rk
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["has_keys", "physical_apply", "physical_value", "physicalize"]

_is_key = rk.is_key_aval


def _eqn_has_keys(eqn) -> bool:
    return (
        eqn.primitive in rk.PHYSICAL
        or any(_is_key(v.aval) for v in eqn.invars)
        or any(_is_key(v.aval) for v in eqn.outvars)
        or (eqn.primitive.higher_order and any(has_keys(j) for j in sub_jaxprs(eqn.params)))
    )


def _jaxpr_has_keys(j: Jaxpr) -> bool:
    return (
        any(_is_key(v.aval) for v in j.invars)
        or any(_is_key(v.aval) for v in j.constvars)
        or any(_is_key(getattr(v, "aval", None)) for v in j.outvars)
        or any(_eqn_has_keys(e) for e in j.eqns)
    )


def has_keys(jaxpr) -> bool:
    """Whether `jaxpr` (a Jaxpr or ClosedJaxpr) or a body nested in it holds a key value."""
    if not rk.KEYS_USED[0]:
        return False
    obj = jaxpr
    j = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    try:
        return memoized(obj, "has_keys", lambda: _jaxpr_has_keys(j))
    except AttributeError:  # an object without a memo table
        return _jaxpr_has_keys(j)


def physical_value(x):
    """The words of a concrete key value; anything else as it is."""
    leaf = rk.KEY_LEAF[0]
    return x._data if leaf is not None and type(x) is leaf else x


# ------------------------------------------------------------------------ one equation at a time

_batched_rules: dict = {}
_lock = threading.Lock()


def _single_rule(prim, params, single_avals, n):
    """The physical rule of `prim` for one key, traced and batched over `n` keys (memoized)."""
    key = (prim, tuple(sorted(params.items())), tuple(single_avals), n, config.threefry_partitionable)
    with _lock:
        hit = _batched_rules.get(key)
    if hit is not None:
        return hit
    rule = rk.PHYSICAL[prim]
    closed = trace_to_jaxpr(lambda *a: rule(*a, **params), list(single_avals))
    batched, _ = batch_jaxpr(closed, AxisData(n), (0,) * len(single_avals), instantiate=True)
    with _lock:
        if len(_batched_rules) > 256:
            _batched_rules.clear()
        _batched_rules[key] = batched
    return batched


def _reshape(x, shape):
    if get_aval(x).shape == tuple(shape):
        return x
    return reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _broadcast(x, shape):
    xs = get_aval(x).shape
    if xs == tuple(shape):
        return x
    lead = len(shape) - len(xs)
    return broadcast_in_dim_p.bind(
        x, shape=tuple(shape), broadcast_dimensions=tuple(range(lead, len(shape))), sharding=None
    )


def _apply_random(prim, phys, in_avals, params):
    out_aval = rk.physical_aval(prim.abstract_eval(*in_avals, **params))
    if prim is rk.random_fold_in_p:
        lead = in_avals[0].shape or in_avals[1].shape
        phys = [_broadcast(phys[0], (*lead, 2)), _broadcast(phys[1], lead)]
    else:
        lead = in_avals[0].shape
    rule = rk.PHYSICAL[prim]
    if not lead:
        return rule(*phys, **params)
    n = math.prod(lead)
    if n == 0:
        from morphax._src.core.values import make_array  # noqa: PLC0415

        zero = make_array(0, out_aval.dtype)
        return [broadcast_in_dim_p.bind(zero, shape=out_aval.shape, broadcast_dimensions=(), sharding=None)]
    flat = [_reshape(p, (n, *get_aval(p).shape[len(lead) :])) for p in phys]
    single = [get_aval(p).update(shape=get_aval(p).shape[1:], weak_type=False) for p in flat]
    batched = _single_rule(prim, params, single, n)
    (out,) = eval_jaxpr(batched.jaxpr, batched.consts, *flat)
    return [_reshape(out, out_aval.shape)]


def physical_params(params):
    """`params` with every jaxpr in them rewritten to the key words."""
    out = {}
    for k, v in params.items():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            v = _physical_any(v)
        elif isinstance(v, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v):
            v = type(v)(_physical_any(x) if isinstance(x, (Jaxpr, ClosedJaxpr)) else x for x in v)
        out[k] = v
    return out


def _physical_any(j):
    if isinstance(j, ClosedJaxpr):
        return physicalize(j)
    if not has_keys(j):
        return j
    closed = physicalize(ClosedJaxpr(j, []))
    if closed.consts:
        raise NotImplementedError("typed keys: an open jaxpr whose key rules need constants")
    return closed.jaxpr


def physical_apply(prim, phys, in_avals, params) -> list:
    """One equation of `prim` with key operands or results, on the keys' words: `phys` are the
    operands (keys as words), `in_avals` their logical avals; returns the results as a list."""
    if prim in rk.PHYSICAL:
        return list(_apply_random(prim, phys, in_avals, params))
    layout = rk.LAYOUT.get(prim)
    if layout is not None:
        return [layout(*phys, avals=in_avals, **params)]
    if prim.higher_order:
        params = physical_params(params)
    elif any(_is_key(a) for a in in_avals):
        raise TypeError(f"{prim.name} does not accept key arrays (dtype key<fry>)")
    out = prim.bind(*phys, **params)
    return list(out) if prim.multiple_results else [out]


# ---------------------------------------------------------------------------- whole programs


def _eval_physical(jaxpr: Jaxpr, consts, args):
    env = {}

    def read(v):
        return physical_value(v.val) if isinstance(v, Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        if _eqn_has_keys(eqn):
            outs = physical_apply(eqn.primitive, ins, [v.aval for v in eqn.invars], eqn.params)
        else:
            out = eqn.primitive.bind(*ins, **eqn.params)
            outs = out if eqn.primitive.multiple_results else [out]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def physicalize(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` on the words of its keys (itself when it holds none); memoized on it."""
    if not has_keys(closed):
        return closed

    def build():
        consts = [physical_value(c) for c in closed.consts]
        in_avals = [rk.physical_aval(a) for a in closed.in_avals]
        return trace_to_jaxpr(lambda *args: _eval_physical(closed.jaxpr, consts, args), in_avals)

    return memoized(closed, ("physical", config.threefry_partitionable), build)
