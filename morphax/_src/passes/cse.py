"""Common-subexpression elimination: merge equations with the same primitive, params and inputs,
and constvars bound to the same constant object.

Params compare with ``==`` (unhashable ones and jaxprs by identity); literals by value and dtype.
Side-effecting equations are never merged. Recurses into the closed jaxprs of calls.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, Literal
from morphax._src.passes._util import (
    PassResult,
    eqn_has_effects,
    eqn_weight,
    finish,
    map_closed_params,
    subst_all,
    with_invars,
)

__all__ = ["cse", "run_cse"]


class _Ident:
    """Compares and hashes by the identity of the wrapped object."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Ident and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _param_key(v):
    if isinstance(v, (Jaxpr, ClosedJaxpr)):
        return _Ident(v)
    try:
        hash(v)
    except TypeError:
        return _Ident(v)
    # The type too, so that e.g. ``True`` and ``1`` (equal in Python) stay distinct.
    return (type(v), v)


def _literal_key(v: Literal):
    val = np.asarray(v.val, dtype=v.aval.dtype)
    # Raw bytes: -0.0 and 0.0 stay apart, and a NaN equals the same NaN.
    return ("lit", val.dtype.str, v.aval.weak_type, val.shape, val.tobytes())


def _eqn_key(eqn, lit_keys: dict):
    try:
        atoms = []
        for v in eqn.invars:
            if type(v) is Literal:
                # Literals live as long as the jaxpr, so their ids are stable keys for the memo.
                k = lit_keys.get(id(v))
                if k is None:
                    k = lit_keys[id(v)] = _literal_key(v)
                atoms.append(k)
            else:
                atoms.append(id(v))
        items = eqn.params.items()
        params = tuple(
            sorted((k, _param_key(v)) for k, v in items)
            if len(items) > 1
            else ((k, _param_key(v)) for k, v in items)
        )
        key = (eqn.primitive, tuple(atoms), params)
        hash(key)
    except TypeError:  # a param whose hash is defined but fails on its contents
        return None
    return key


def _mergeable(prev, eqn) -> bool:
    if len(prev.outvars) != len(eqn.outvars):
        return False
    for a, b in zip(prev.outvars, eqn.outvars):
        if isinstance(b, DropVar):
            continue
        if isinstance(a, DropVar) or a.aval != b.aval:
            return False
    return True


def run_cse(closed: ClosedJaxpr, _memo: dict | None = None) -> PassResult:
    memo = {} if _memo is None else _memo
    jaxpr = closed.jaxpr
    env: dict = {}
    removed = 0

    # Staging already gives one constvar per constant object; jaxprs assembled by hand or by
    # other passes may not.
    constvars, consts = [], []
    const_of: dict[int, object] = {}
    for v, c in zip(jaxpr.constvars, closed.consts):
        other = const_of.get(id(c))
        if other is not None and other.aval == v.aval:
            env[id(v)] = other
            continue
        const_of[id(c)] = v
        constvars.append(v)
        consts.append(c)

    seen: dict = {}
    lit_keys: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = with_invars(eqn, env)
        eqn, inner_removed = map_closed_params(eqn, lambda c: run_cse(c, memo), memo)
        removed += inner_removed
        if eqn_has_effects(eqn):
            eqns.append(eqn)
            continue
        key = _eqn_key(eqn, lit_keys)
        prev = seen.get(key) if key is not None else None
        if prev is not None and _mergeable(prev, eqn):
            for a, b in zip(prev.outvars, eqn.outvars):
                if not isinstance(b, DropVar):
                    env[id(b)] = a
            removed += eqn_weight(eqn)
            continue
        if key is not None:
            seen[key] = eqn
        eqns.append(eqn)
    outvars = subst_all(env, jaxpr.outvars)
    return finish(closed, constvars, consts, eqns, outvars, removed)


def cse(closed: ClosedJaxpr) -> ClosedJaxpr:
    return run_cse(closed).closed
