"""Dead-code elimination: drop equations nobody reads, and constvars nobody uses.

Side-effecting equations (and calls whose jaxprs contain one) always stay. Higher-order primitives
may declare ``prim.dce_rule(used_outputs, eqn) -> (used_inputs, new_eqn | None)``; plain calls
(``prim.call_jaxpr_param``: pjit, remat) share the one here.
"""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from morphax._src.passes._util import (
    PassResult,
    cache_get,
    cache_put,
    eqn_has_effects,
    eqn_weight,
    finish,
)

__all__ = ["dce", "dce_closed_jaxpr", "run_dce"]


def _dce_eqns(jaxpr: Jaxpr, used_outputs) -> tuple[list, set, int]:
    """Walk backwards from the used outputs. Returns (kept eqns, ids of live vars, eqns removed)."""
    live = {id(v) for v, u in zip(jaxpr.outvars, used_outputs) if u and type(v) is not Literal}
    kept = []
    removed = 0
    for eqn in reversed(jaxpr.eqns):
        used = [id(v) in live for v in eqn.outvars]
        prim = eqn.primitive
        rule = prim.dce_rule or (call_dce_rule if prim.call_jaxpr_param else None)
        if rule is not None:
            used_inputs, new_eqn = rule(used, eqn)
            if new_eqn is None:
                removed += eqn_weight(eqn)
                continue
            removed += eqn_weight(eqn) - eqn_weight(new_eqn)
            kept.append(new_eqn)
            live.update(id(v) for v, u in zip(eqn.invars, used_inputs) if u and type(v) is not Literal)
        elif any(used) or eqn_has_effects(eqn):
            kept.append(eqn)
            live.update(id(v) for v in eqn.invars if type(v) is not Literal)
        else:
            removed += eqn_weight(eqn)
    kept.reverse()
    return kept, live, removed


def _dce_closed(closed: ClosedJaxpr, used_outputs, prune_invars: bool) -> tuple[PassResult, list[bool]]:
    jaxpr = closed.jaxpr
    eqns, live, removed = _dce_eqns(jaxpr, used_outputs)
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    used_inputs = [id(v) in live for v in jaxpr.invars]
    invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u] if prune_invars else jaxpr.invars
    keep_c = [id(v) in live for v in jaxpr.constvars]
    constvars = [v for v, k in zip(jaxpr.constvars, keep_c) if k]
    consts = [c for c, k in zip(closed.consts, keep_c) if k]
    if not prune_invars:
        used_inputs = [True] * len(jaxpr.invars)
    return finish(closed, constvars, consts, eqns, outvars, removed, invars), used_inputs


def dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs, prune_invars: bool = False):
    """DCE `closed` keeping only the outputs marked in `used_outputs`; with `prune_invars` also
    drop the inputs nothing reads. Returns (PassResult, used_inputs). Memoized per (jaxpr, used
    outputs), so calls sharing a jaxpr keep sharing the reduced one."""
    key = (tuple(bool(u) for u in used_outputs), prune_invars)
    hit = cache_get("dce", key, closed)
    if hit is not None:
        return hit
    return cache_put("dce", key, closed, _dce_closed(closed, used_outputs, prune_invars))


def run_dce(closed: ClosedJaxpr) -> PassResult:
    """DCE with every output used; the interface (invars, outvars) is kept."""
    res, _ = _dce_closed(closed, [True] * len(closed.jaxpr.outvars), prune_invars=False)
    return res


def dce(closed: ClosedJaxpr) -> ClosedJaxpr:
    return run_dce(closed).closed


# ------------------------------------------------------------------------------- calls' rule


def call_dce_rule(used_outputs, eqn):
    """For every plain call (Primitive.call_jaxpr_param): drop the call's unused outputs, then
    the operands its reduced jaxpr no longer reads."""
    if not any(used_outputs) and not eqn_has_effects(eqn):
        return [False] * len(eqn.invars), None
    param = eqn.primitive.call_jaxpr_param
    res, used_inputs = dce_closed_jaxpr(eqn.params[param], used_outputs, prune_invars=True)
    if not res.changed:
        return used_inputs, eqn
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params={**eqn.params, param: res.closed},
    )
    return used_inputs, new_eqn
