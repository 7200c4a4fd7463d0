"""Partial evaluation of a whole jaxpr: split it into the part computable from the known inputs
and the part that needs the unknown ones, connected by residuals.

Used by every higher-order primitive when linearization reaches it with some inputs known and
some not. Generic: no primitive is named here.
"""

from __future__ import annotations

from morphax._src.core import trace as _trace
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr
from morphax._src.core.memo import memoized
from morphax._src.transforms.ad import PartialEvalTrace
from morphax._src.transforms.staging import trace_to_jaxpr


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate=False):
    """Returns (known_jaxpr, unknown_jaxpr, out_unknowns, num_res).

    known_jaxpr:   known inputs -> known outputs + residuals
    unknown_jaxpr: residuals + unknown inputs -> unknown outputs

    An output marked in `instantiate` (a bool per output, or one for all) is unknown even when
    the known inputs determine it (its value then travels as a residual), so that several bodies
    (the branches of a cond, a loop's carry) split their outputs the same way. Memoized on `closed` (core/memo.py): linearizing the same jitted function again (eager `grad`
    in a training loop) reuses the split jaxprs, and with them their compiled executables.
    """
    n_out = len(closed.out_avals)
    force = (bool(instantiate),) * n_out if isinstance(instantiate, bool) else tuple(map(bool, instantiate))
    key = ("partial_eval", tuple(bool(u) for u in unknowns), force)
    return memoized(closed, key, lambda: _split(closed, unknowns, force))


def _split(closed: ClosedJaxpr, unknowns, force):
    in_avals = closed.in_avals
    known_avals = [a for a, u in zip(in_avals, unknowns) if not u]
    box: dict = {}

    def known_fun(*known_args):
        it = iter(known_args)
        with _trace.new_trace(PartialEvalTrace()) as pe:
            args = [pe.new_arg(a) if u else next(it) for a, u in zip(in_avals, unknowns)]
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
            out_unknowns = [pe._owns(o) or f for o, f in zip(outs, force)]
            unknown_closed = pe.to_closed_jaxpr([o for o, u in zip(outs, out_unknowns) if u])
        box["unknown"] = unknown_closed
        box["out_unknowns"] = out_unknowns
        residuals = list(unknown_closed.consts)
        return [o for o, u in zip(outs, out_unknowns) if not u] + residuals

    known_closed = trace_to_jaxpr(known_fun, known_avals)
    unknown = box["unknown"].jaxpr
    # Residuals (the unknown part's constants) become its leading inputs.
    unknown_jaxpr = ClosedJaxpr(
        Jaxpr([], unknown.constvars + unknown.invars, unknown.outvars, unknown.eqns), []
    )
    return known_closed, unknown_jaxpr, box["out_unknowns"], len(unknown.constvars)
