"""Helpers shared by the jaxpr passes: substitution environments, side-effect queries, equation
counts and the recursion into jaxprs that higher-order primitives carry in their params.

Passes never mutate their input; they build new `Jaxpr` objects and reuse unchanged ones.
"""

from __future__ import annotations

from typing import NamedTuple

from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, sub_jaxprs
from morphax._src.core.memo import MISSING, memo_get, memo_put


class PassResult(NamedTuple):
    """What one pass produced: the new closed jaxpr, how many equations it removed (nested
    jaxprs included) and whether anything changed at all (`closed` is the input when not)."""

    closed: ClosedJaxpr
    removed: int
    changed: bool


# Pass results are memoized on the jaxpr they were computed from (core/memo.py), under the pass's
# name and the rest of its key, so they are freed with it. A result that is the input itself
# (an unchanged PassResult) is stored without that self-reference, so no cycle keeps the
# jaxpr's constants alive until the cyclic GC runs.


def _detach(value, obj):
    if type(value) is PassResult:
        return value._replace(closed=None) if value.closed is obj else value
    if type(value) is tuple:
        return tuple(_detach(v, obj) for v in value)
    return value


def _attach(value, obj):
    if type(value) is PassResult:
        return value._replace(closed=obj) if value.closed is None else value
    if type(value) is tuple:
        return tuple(_attach(v, obj) for v in value)
    return value


def cache_get(kind: str, key, obj):
    """What pass `kind` memoized on `obj` for `key`; None when absent."""
    hit = memo_get(obj, (kind, key))
    return None if hit is MISSING else _attach(hit, obj)


def cache_put(kind: str, key, obj, value):
    memo_put(obj, (kind, key), _detach(value, obj))
    return value


def use_counts(jaxpr, output_weight: int = 1) -> dict:
    """{id(var): how many times `jaxpr` reads it}: once per equation operand, and
    `output_weight` times for each appearance among the outputs."""
    uses: dict[int, int] = {}
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if type(v) is not Literal:
                uses[id(v)] = uses.get(id(v), 0) + 1
    for v in jaxpr.outvars:
        if type(v) is not Literal:
            uses[id(v)] = uses.get(id(v), 0) + output_weight
    return uses


def subst(env: dict, v):
    """The atom that replaces `v` (itself when not rewritten); literals are never rewritten."""
    if type(v) is Literal:
        return v
    return env.get(id(v), v)


def subst_all(env: dict, atoms: list) -> list:
    return [subst(env, v) for v in atoms] if env else atoms


def with_invars(eqn, env: dict):
    """`eqn` with its inputs rewritten through `env`; the same object when none changes."""
    if not env:
        return eqn
    new = [subst(env, v) for v in eqn.invars]
    if all(a is b for a, b in zip(new, eqn.invars)):
        return eqn
    return eqn.replace(invars=new)


def _open(j) -> Jaxpr:
    return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def count_eqns(jaxpr) -> int:
    """Equations in `jaxpr`, counting those of nested jaxprs (once per occurrence)."""
    return sum(eqn_weight(e) for e in _open(jaxpr).eqns)


def eqn_weight(eqn) -> int:
    """1 for the equation plus the equations of the jaxprs it carries."""
    if not eqn.primitive.higher_order:
        return 1
    return 1 + sum(count_eqns(j) for j in sub_jaxprs(eqn.params))


def jaxpr_has_effects(jaxpr) -> bool:
    j = _open(jaxpr)
    hit = cache_get("effects", None, j)
    if hit is not None:
        return hit
    return cache_put("effects", None, j, any(eqn_has_effects(e) for e in j.eqns))


def eqn_has_effects(eqn) -> bool:
    """Whether the equation must run even if nobody reads its outputs, and may not be merged with
    an identical one: its primitive says so (`has_side_effects`), or a jaxpr it carries does."""
    prim = eqn.primitive
    if prim.has_side_effects:
        return True
    # A primitive whose effects depend on its params (ffi_call's has_side_effect).
    if prim.effect_rule is not None and prim.effect_rule(**eqn.params):
        return True
    return prim.higher_order and any(jaxpr_has_effects(j) for j in sub_jaxprs(eqn.params))


def map_closed_params(eqn, fn, memo: dict):
    """Apply the interface-preserving pass `fn` (ClosedJaxpr -> PassResult) to every ClosedJaxpr in
    a higher-order equation's params. Open `Jaxpr` params are left alone: their constvars are part
    of the caller's interface. Results are memoized by the input object, so equations that shared
    a jaxpr still share the rewritten one (which lets CSE merge them). Returns (eqn, removed)."""
    if not eqn.primitive.higher_order:
        return eqn, 0
    removed = 0
    new_params = None

    def run(closed):
        nonlocal removed
        # `memo` lives for one pass over one jaxpr, which keeps every key alive: ids are safe.
        res = memo.get(id(closed))
        if res is None:
            res = memo[id(closed)] = fn(closed)
        removed += res.removed
        return res.closed

    for k, v in eqn.params.items():
        if isinstance(v, ClosedJaxpr):
            nv = run(v)
        elif isinstance(v, (tuple, list)) and any(isinstance(x, ClosedJaxpr) for x in v):
            nv = type(v)(run(x) if isinstance(x, ClosedJaxpr) else x for x in v)
            if all(a is b for a, b in zip(nv, v)):
                nv = v
        else:
            continue
        if nv is not v:
            if new_params is None:
                new_params = dict(eqn.params)
            new_params[k] = nv
    if new_params is None:
        return eqn, removed
    return eqn.replace(params=new_params), removed


def finish(closed: ClosedJaxpr, constvars, consts, eqns, outvars, removed: int, invars=None) -> PassResult:
    """Build the pass result, returning the input object itself when nothing differs (so repeated
    passes and the pipeline's fixed-point test see identity)."""
    old = closed.jaxpr
    invars = old.invars if invars is None else invars
    same = (
        _same(old.eqns, eqns)
        and _same(old.outvars, outvars)
        and _same(old.constvars, constvars)
        and _same(old.invars, invars)
        and _same(closed.consts, consts)
    )
    if same:
        return PassResult(closed, 0, False)
    jaxpr = Jaxpr(constvars, invars, outvars, eqns, old.debug_info)
    return PassResult(ClosedJaxpr(jaxpr, consts), removed, True)


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
