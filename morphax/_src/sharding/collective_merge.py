"""Reductions across devices that do not depend on one another, merged into one.

The partitioner (sharding/spmd.py) emits one psum per value it reduces: a data-parallel step's
backward pass gives one per gradient, interleaved with the computation of the next. Each is a
rendezvous of every device (and, across processes, an MPI exchange), and each cuts the program
into separately compiled segments, so seven gradients cost seven meetings, a wait for the slowest
device at each, and seven breaks in kernel fusion. `merge_reductions` delays each psum (pmax,
pmin), with the pure equations that use its results, and issues the delayed reductions with the
same parameters as one equation with several operands: one meeting, one exchange
(`all_reduce_many`), the same values.

Every device runs the same per-device program, so moving collectives keeps them in the same order
on all devices. Only the top level of the program is rewritten; loop and branch bodies keep theirs.
"""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal
from morphax._src.prims.collectives import pmax_p, pmin_p, psum_p
from morphax._src.sharding import variance

__all__ = ["merge_reductions"]

_MERGEABLE = (psum_p, pmax_p, pmin_p)


def _key(eqn):
    """Equations of one key merge: the same reduction over the same axes and groups."""
    params = eqn.params
    groups = params.get("axis_index_groups")
    groups = None if groups is None else tuple(tuple(g) for g in groups)
    return (eqn.primitive, tuple(params.get("axes", ())), groups)


def merge_reductions(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with independent reductions of the same kind merged into one (the program
    unchanged where there is nothing to merge). A reduction is delayed together with the pure
    equations that use its results (a transpose of a gradient, the optimizer update), until an
    equation that must not move (an effect, another collective, a reduction of a delayed value)
    needs them, or the program ends; the delayed reductions are then issued, merged, followed by
    the delayed equations in their order."""
    jaxpr = closed.jaxpr
    if sum(eqn.primitive in _MERGEABLE for eqn in jaxpr.eqns) < 2:
        return closed
    out: list = []
    pending: dict = {}  # key -> the delayed reductions, in program order
    deferred: list = []  # pure equations that read delayed results, in program order
    delayed: set = set()  # id() of the results of delayed reductions and deferred equations

    def flush():
        for group in pending.values():
            first = group[0]
            out.append(
                first
                if len(group) == 1
                else JaxprEqn(
                    first.primitive,
                    [v for eqn in group for v in eqn.invars],
                    [v for eqn in group for v in eqn.outvars],
                    first.params,
                    first.source_info,
                )
            )
        out.extend(deferred)
        pending.clear()
        deferred.clear()
        delayed.clear()

    for eqn in jaxpr.eqns:
        reads_delayed = any(type(v) is not Literal and id(v) in delayed for v in eqn.invars)
        if eqn.primitive in _MERGEABLE:
            if reads_delayed:
                flush()
            pending.setdefault(_key(eqn), []).append(eqn)
        elif reads_delayed and not eqn.effects and not variance.mentions_axes(eqn):
            deferred.append(eqn)
        else:
            if reads_delayed:
                flush()
            out.append(eqn)
            continue
        delayed.update(id(v) for v in eqn.outvars)
    flush()
    merged = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, out, jaxpr.debug_info)
    return ClosedJaxpr(merged, closed.consts)
