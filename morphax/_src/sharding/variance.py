"""Which mesh axes each value of a per-device program may vary along (device variance).

Inputs vary along the axes their devices split them over (the caller says which). A psum, pmax,
pmin or all_gather over an axis makes its result invariant along it; axis_index, ppermute,
psum_scatter and all_to_all over an axis make it vary along it; a reduction over groups of an
axis (`axis_index_groups`) leaves its result varying along it (the groups may differ). Calls are
followed into their bodies; every other equation varies along the union of its inputs' axes,
and, for control flow, of the axes its bodies' collectives name: conservative, so a loop that
reduces a varying carry counts as varying.

Used by shard_map's `check_vma` and by pmap's runner, which computes an output that every device
holds alike (invariant along every axis) on one device only.
"""

from __future__ import annotations

from morphax._src.core.jaxpr import any_eqn, sub_jaxprs

__all__ = ["mentions_axes", "vary"]

_REDUCING = {"psum", "pmax", "pmin", "all_gather"}
_INTRODUCING = {"axis_index", "ppermute", "psum_scatter", "all_to_all"}


def _names_of(eqn) -> tuple:
    key = eqn.primitive.named_axes_param
    names = eqn.params.get(key) if key else None
    if names is None:
        return ()
    return names if isinstance(names, tuple) else (names,)


def _mentioned(jaxpr, axes) -> set:
    found = set()
    for eqn in jaxpr.eqns:
        found |= set(_names_of(eqn)) & axes
        for sub in sub_jaxprs(eqn.params):
            found |= _mentioned(getattr(sub, "jaxpr", sub), axes)
    return found


def mentions_axes(eqn) -> bool:
    """Whether `eqn` is a collective (any primitive that names mesh or map axes) or carries one in
    a body: every device must run it for the others' collectives to complete."""
    if _names_of(eqn):
        return True
    return eqn.primitive.higher_order and any(
        any_eqn(sub, lambda e: bool(_names_of(e))) for sub in sub_jaxprs(eqn.params)
    )


def vary(jaxpr, in_vary, axes) -> list:
    """For each output of `jaxpr` (a Jaxpr), the frozenset of the names in `axes` it may vary
    along, given `in_vary` (one frozenset per input; constants vary along none)."""
    env = {id(v): s for v, s in zip(jaxpr.invars, in_vary)}

    def read(v):
        return env.get(id(v), frozenset())

    for eqn in jaxpr.eqns:
        union = frozenset().union(*[read(v) for v in eqn.invars]) if eqn.invars else frozenset()
        pname = eqn.primitive.name
        names = set(_names_of(eqn)) & axes
        call_param = eqn.primitive.call_jaxpr_param
        if pname in _REDUCING and eqn.params.get("axis_index_groups") is None:
            out = union - names
        elif pname in _INTRODUCING or pname in _REDUCING:
            out = union | names
        elif call_param is not None and len(eqn.params[call_param].jaxpr.invars) == len(eqn.invars):
            # A call (jit, checkpoint, custom rules): its body, input for input.
            inner = vary(eqn.params[call_param].jaxpr, [read(v) for v in eqn.invars], axes)
            for v, o in zip(eqn.outvars, inner):
                env[id(v)] = o
            continue
        else:
            out = union
            for sub in sub_jaxprs(eqn.params):
                out = out | _mentioned(getattr(sub, "jaxpr", sub), axes)
        for v in eqn.outvars:
            env[id(v)] = frozenset(out)
    return [read(v) for v in jaxpr.outvars]
