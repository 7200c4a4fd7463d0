"""Forwarding: readers of an identity equation's output (one whose primitive's `is_identity` says
so for its params: copy, a no-op convert_element_type, reshape, broadcast_in_dim, transpose,
squeeze or rev, ``x ** 1``) read its input instead, and outputs of calls that are their inputs
are rewired. `forwarded_outputs` tells the runtime which outputs are
inputs, so it can skip copying them."""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Literal
from morphax._src.passes._util import (
    PassResult,
    cache_get,
    cache_put,
    finish,
    map_closed_params,
    subst,
    subst_all,
    with_invars,
)

__all__ = ["forward", "forwarded_outputs", "identity_source", "run_forwarding"]


def identity_source(eqn):
    """The atom an identity equation returns unchanged, else None. The output type must equal the
    input's exactly (weak type included), so readers can't tell the difference."""
    rule = eqn.primitive.is_identity
    if rule is None or len(eqn.invars) != 1 or len(eqn.outvars) != 1:
        return None
    src, out = eqn.invars[0], eqn.outvars[0]
    if src.aval != out.aval or eqn.primitive.has_side_effects:
        return None
    try:
        return src if rule(src.aval, **eqn.params) else None
    except Exception:  # unexpected param shapes: not an identity we understand
        return None


def _inner_sources(closed: ClosedJaxpr) -> list:
    """For each output of `closed`: ("in", i) if it is invar i, ("lit", literal), or None."""
    hit = cache_get("forwarding", None, closed)
    if hit is not None:
        return hit
    jaxpr = closed.jaxpr
    resolved = _resolve(jaxpr)
    index = {id(v): i for i, v in enumerate(jaxpr.invars)}
    out = []
    for v in jaxpr.outvars:
        r = subst(resolved, v)
        if type(r) is Literal:
            out.append(("lit", r))
        elif id(r) in index:
            out.append(("in", index[id(r)]))
        else:
            out.append(None)
    return cache_put("forwarding", None, closed, out)


def _call_sources(eqn) -> list | None:
    """Per output of a plain call (Primitive.call_jaxpr_param), the caller-side atom it equals
    (or None)."""
    param = eqn.primitive.call_jaxpr_param
    if param is None:
        return None
    srcs = []
    for out, s in zip(eqn.outvars, _inner_sources(eqn.params[param])):
        atom = None
        if s is not None:
            atom = s[1] if s[0] == "lit" else eqn.invars[s[1]]
        if atom is not None and (isinstance(out, DropVar) or atom.aval != out.aval):
            atom = None
        srcs.append(atom)
    return srcs


def _resolve(jaxpr) -> dict:
    """Map from var id to the atom it equals, following identity equations and pjit forwarding."""
    env: dict = {}
    for eqn in jaxpr.eqns:
        eqn = with_invars(eqn, env)
        src = identity_source(eqn)
        if src is not None:
            env[id(eqn.outvars[0])] = src
            continue
        for out, atom in zip(eqn.outvars, _call_sources(eqn) or ()):
            if atom is not None:
                env[id(out)] = atom
    return env


def forwarded_outputs(closed: ClosedJaxpr) -> list[int | None]:
    """For each output of `closed`, the index of the input it is equal to (directly, or through
    identity equations and pjit calls), else None."""
    return [s[1] if s is not None and s[0] == "in" else None for s in _inner_sources(closed)]


def run_forwarding(closed: ClosedJaxpr, _memo: dict | None = None) -> PassResult:
    memo = {} if _memo is None else _memo
    jaxpr = closed.jaxpr
    env: dict = {}
    eqns = []
    removed = 0
    for eqn in jaxpr.eqns:
        eqn = with_invars(eqn, env)
        eqn, inner_removed = map_closed_params(eqn, lambda c: run_forwarding(c, memo), memo)
        removed += inner_removed
        src = identity_source(eqn)
        if src is not None:
            env[id(eqn.outvars[0])] = src
            removed += 1
            continue
        # The call itself stays; its forwarded outputs become unread and DCE drops them.
        for out, atom in zip(eqn.outvars, _call_sources(eqn) or ()):
            if atom is not None:
                env[id(out)] = atom
        eqns.append(eqn)
    outvars = subst_all(env, jaxpr.outvars)
    return finish(closed, jaxpr.constvars, closed.consts, eqns, outvars, removed)


def forward(closed: ClosedJaxpr) -> ClosedJaxpr:
    return run_forwarding(closed).closed
