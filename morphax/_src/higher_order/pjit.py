"""`pjit`: the call primitive `jit` binds, whose parameter is the traced closed jaxpr. As in
JAX 0.10 the primitive is named ``jit`` (``jit[name=f jaxpr={...}]`` in a printed jaxpr).

Its rules transform the inner jaxpr, so `jit` composes with every transformation: JVP traces
a JVP jaxpr, linearization splits it with `partial_eval_jaxpr`, transposition runs the backward
pass over the inner linear jaxpr. Its impl here evaluates the jaxpr; evaluated eagerly it runs
compiled instead (`eager_compiled`: runtime/eager.py compiles the jaxpr and runs it).
"""

from __future__ import annotations

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, is_undefined_primal, is_zero
from morphax._src.core.avals import get_aval
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from morphax._src.core.memo import MISSING, memo_get, memo_put
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims.conversion import convert_element_type_p
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.partial_eval import partial_eval_jaxpr
from morphax._src.transforms.staging import (
    StagingTrace,
    call_out_avals,
    closure_convert_tracers,
    eval_call_jaxpr,
    trace_to_jaxpr,
)

pjit_p = Primitive("jit", multiple_results=True)
pjit_p.kind = Kind.CALL
pjit_p.higher_order = True
pjit_p.call_jaxpr_param = "jaxpr"  # DCE and forwarding see through the call (passes/)
pjit_p.eager_compiled = True  # evaluated eagerly, its jaxpr runs compiled (runtime/eager.py)
# Printed as JAX prints a jit call: ``name=`` first, the jaxpr's variables named after the
# operands and results of the call (core/jaxpr.py).
pjit_p.pp_leading_params = ("name",)
pjit_p.pp_shares_names = True


def _pjit_impl(*args, jaxpr, name):
    return eval_call_jaxpr(jaxpr, args)


def _pjit_abstract_eval(*in_avals, jaxpr, name):
    return call_out_avals(f"pjit {name}", in_avals, jaxpr)


def _pjit_jvp(primals, tangents, *, jaxpr, name):
    nonzeros = [not is_zero(t) for t in tangents]
    jvp_closed, out_nonzero = ad.jvp_jaxpr(jaxpr, nonzeros)
    outs = pjit_p.bind(*primals, *[t for t in tangents if not is_zero(t)], jaxpr=jvp_closed, name=name)
    n_out = len(jaxpr.out_avals)
    out_p, nz_t = outs[:n_out], iter(outs[n_out:])
    out_t = [next(nz_t) if nz else Zero(ad.tangent_aval(a)) for a, nz in zip(jaxpr.out_avals, out_nonzero)]
    return out_p, out_t


def _pjit_partial_eval(trace, args, params):
    """Known inputs run the known part now (on the parent trace); the rest is staged."""
    jaxpr, name = params["jaxpr"], params["name"]
    unknowns = [trace._owns(x) for x in args]
    known_jaxpr, unknown_jaxpr, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with _trace.set_current_trace(trace.parent):
        known_outs = pjit_p.bind(*known_args, jaxpr=known_jaxpr, name=name)
    n_known = len(known_outs) - num_res
    known_vals, residuals = known_outs[:n_known], known_outs[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    staged = StagingTrace.process_primitive(
        trace, pjit_p, residuals + unknown_args, {"jaxpr": unknown_jaxpr, "name": name}
    )
    known_it, staged_it = iter(known_vals), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in out_unknowns]


def _pjit_transpose(cts, *args, jaxpr, name):
    # JAX binds `jit` on the cotangents, which makes a Python scalar one (`linear_transpose`
    # passes the user's through as they are) a weakly typed array of the current trace; the
    # rules inside see arrays (equinox's primitives would take a float for a static leaf).
    cts = [_scalar_as_array(ct) for ct in cts]
    undefined = tuple(is_undefined_primal(a) for a in args)
    ct_avals = tuple(ct.aval if is_zero(ct) else get_aval(ct) for ct in cts)
    ct_nonzero = tuple(not is_zero(ct) for ct in cts)
    transposed, out_nonzero, lifted = _transpose_jaxpr(jaxpr, undefined, ct_avals, ct_nonzero)
    known = [a for a, u in zip(args, undefined) if not u]
    outs = iter(
        pjit_p.bind(*lifted, *known, *[ct for ct in cts if not is_zero(ct)], jaxpr=transposed, name=name)
    )
    lin_avals = iter(a for a, u in zip(jaxpr.in_avals, undefined) if u)
    out = []
    for u in undefined:
        if not u:
            out.append(None)
            continue
        aval = next(lin_avals)
        out.append(next(outs) if out_nonzero.pop(0) else Zero(ad.tangent_aval(aval)))
    return out


def _transpose_jaxpr(closed: ClosedJaxpr, undefined, ct_avals, ct_nonzero):
    """The transpose of `closed` as a jaxpr of (its known inputs, the nonzero cotangents) ->
    the nonzero cotangents of its linear inputs, as JAX stages the transpose of a jit into a jit
    of its own. Memoized on `closed`: a second `grad` of the same jitted function runs the same
    program, without running the transpose rules inside (a custom_vjp's bwd) again.

    Returns (jaxpr, which linear inputs have a nonzero cotangent, lifted): `lifted` are tracers
    of enclosing transformations the rules closed over, the jaxpr's leading inputs (a jaxpr
    holding them is not memoized: they belong to one trace)."""
    key = ("transpose", undefined, ct_avals, ct_nonzero)
    hit = memo_get(closed, key)
    if hit is not MISSING:
        return hit[0], list(hit[1]), []
    inner = closed.jaxpr
    known_idx = [i for i, u in enumerate(undefined) if not u]
    linear_idx = [i for i, u in enumerate(undefined) if u]
    linear_jaxpr = Jaxpr(
        inner.constvars + [inner.invars[i] for i in known_idx],
        [inner.invars[i] for i in linear_idx],
        inner.outvars,
        inner.eqns,
    )
    known_avals = [closed.in_avals[i] for i in known_idx]
    box: dict = {}

    def transpose(*xs):
        known, nz_cts = xs[: len(known_idx)], iter(xs[len(known_idx) :])
        cts = [next(nz_cts) if nz else Zero(a) for a, nz in zip(ct_avals, ct_nonzero)]
        cts_lin = ad.backward_pass(ClosedJaxpr(linear_jaxpr, list(closed.consts) + list(known)), cts)
        box["out_nonzero"] = [not is_zero(ct) for ct in cts_lin]
        return [ct for ct in cts_lin if not is_zero(ct)]

    nz_ct_avals = [a for a, nz in zip(ct_avals, ct_nonzero) if nz]
    transposed, lifted = closure_convert_tracers(trace_to_jaxpr(transpose, known_avals + nz_ct_avals))
    out_nonzero = box["out_nonzero"]
    if not lifted:
        memo_put(closed, key, (transposed, tuple(out_nonzero)))
    return transposed, out_nonzero, lifted


def _scalar_as_array(x):
    if type(x) not in (bool, int, float, complex):
        return x
    dtype = _dtypes.python_scalar_dtype(x)
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=True, sharding=None)


def _pjit_batch(vals, dims, *, axis_data, jaxpr, name):
    batched, out_batched = batch_jaxpr(jaxpr, axis_data, dims)
    return pjit_p.bind(*vals, jaxpr=batched, name=name), [0 if b else None for b in out_batched]


pjit_p.impl = _pjit_impl
pjit_p.batch = _pjit_batch
pjit_p.abstract_eval = _pjit_abstract_eval
pjit_p.jvp = _pjit_jvp
pjit_p.partial_eval = _pjit_partial_eval
pjit_p.transpose = _pjit_transpose
pjit_p.test_spec = None

__all__ = ["pjit_p"]
