"""The `scan` primitive: a loop with a static trip count whose body is a closed jaxpr
``(consts, carry, x) -> (carry, y)`` (the `lax.scan` API that traces it is in loops.py).

Rules: JVP and batching find, by fixed point, which carries get tangents / a batch axis; partial
evaluation (JAX's scheme) runs a known scan now that also stacks the residuals, and stages an
unknown scan reading them as xs (loop-invariant residuals are hoisted out as consts); transposition
is a reverse scan over the linear body. Eagerly the loop runs on host values (see host_eval).
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import (
    Zero,
    add_tangents,
    aval_of,
    instantiate,
    is_undefined_primal,
    is_zero,
    tangent_aval,
    zeros_like_aval,
)
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.dtypes import float0
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, eval_jaxpr, split_list
from morphax._src.core.loop_form import LoopForm
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.higher_order.host_eval import body_runner, host_rules, run_as_program
from morphax._src.prims import _stablehlo as hlo
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.partial_eval import partial_eval_jaxpr
from morphax._src.transforms.staging import StagingTrace, trace_to_jaxpr

__all__ = ["scan_p"]

scan_p = Primitive("scan", multiple_results=True)
scan_p.stablehlo = hlo.scan
scan_p.kind = Kind.LOOP
scan_p.higher_order = True
scan_p.test_spec = None


def _stacked(aval: ShapedArray, length: int) -> ShapedArray:
    return aval.update(shape=(length, *aval.shape))


def _cached(kind, closed, key, build):
    """Memoize a transformed body per (jaxpr object, key), on the jaxpr (core/memo.py)."""
    return memoized(closed, ("scan_" + kind, key), build)


# ------------------------------------------------------------------------ impl and abstract eval


def _scan_host(args, *, jaxpr, length, reverse, num_consts, num_carry, unroll):
    """The loop on NumPy values: one host evaluation of the body per iteration."""
    consts, carry, xs = split_list(args, num_consts, num_carry)
    ys = [np.empty((length, *a.shape), dtype=a.dtype) for a in jaxpr.out_avals[num_carry:]]
    body = body_runner(jaxpr)  # looked up once, called every iteration
    for i in range(length - 1, -1, -1) if reverse else range(length):
        outs = body(*consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for buf, y in zip(ys, outs[num_carry:]):
            buf[i] = y
    return [*carry, *ys]


host_rules[scan_p] = _scan_host


def _scan_impl(*args, jaxpr, length, reverse, num_consts, num_carry, unroll):
    # Stacked xs have their slices' dtype, so the body's input types give every operand's dtype.
    params = dict(
        jaxpr=jaxpr, length=length, reverse=reverse, num_consts=num_consts, num_carry=num_carry, unroll=unroll
    )
    return run_as_program(scan_p, args, jaxpr.in_avals, _out_avals(jaxpr, length, num_carry), params)


def _out_avals(jaxpr, length, num_carry):
    outs = jaxpr.out_avals
    return list(outs[:num_carry]) + [_stacked(a, length) for a in outs[num_carry:]]


def _scan_abstract_eval(*avals, jaxpr, length, reverse, num_consts, num_carry, unroll):
    body_in = jaxpr.in_avals
    if len(avals) != len(body_in):
        raise TypeError(f"scan: the body takes {len(body_in)} operands but the scan got {len(avals)}")
    expected = list(body_in[: num_consts + num_carry]) + [
        _stacked(a, length) for a in body_in[num_consts + num_carry :]
    ]
    bad = [i for i, (a, b) in enumerate(zip(avals, expected)) if a.shape != b.shape or a.dtype != b.dtype]
    if bad:
        raise TypeError(
            f"scan: operand types {[a.str_short() for a in avals]} do not match the body's "
            f"{[b.str_short() for b in expected]} (length={length}, num_consts={num_consts}, num_carry={num_carry})"
        )
    carry_out = jaxpr.out_avals[:num_carry]
    if any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(carry_out, body_in[num_consts:])):
        raise TypeError("scan: the body's carry outputs do not have the types of its carry inputs")
    return _out_avals(jaxpr, length, num_carry)


scan_p.impl = _scan_impl
scan_p.abstract_eval = _scan_abstract_eval


def _scan_loop_form(*, jaxpr, length, reverse, num_consts, num_carry, unroll):
    n_in, n_out = len(jaxpr.in_avals), len(jaxpr.out_avals)
    n_xs, n_ys = n_in - num_consts - num_carry, n_out - num_carry
    inputs = (
        *[("operand", k) for k in range(num_consts)],
        *[("carry", c) for c in range(num_carry)],
        *[("x", j) for j in range(n_xs)],
    )
    outputs = (*[("carry", c) for c in range(num_carry)], *[("y", j) for j in range(n_ys)])
    return LoopForm(
        "scan",
        (jaxpr,),
        (inputs,),
        (outputs,),
        carry_init=tuple(range(num_consts, num_consts + num_carry)),
        carry_final=tuple(range(num_carry)),
        xs=tuple(range(num_consts + num_carry, n_in)),
        ys=tuple(range(num_carry, n_out)),
        length=length,
        reverse=reverse,
    )


scan_p.loop_form = _scan_loop_form


# ------------------------------------------------------------------------------------------ JVP


def _nonzero(t) -> bool:
    # float0 tangents (of integers) are zero whatever their representation.
    return not is_zero(t) and aval_of(t).dtype != float0


def _jvp_body(closed: ClosedJaxpr, nonzeros, num_consts, num_carry, carry_nz):
    """The body's JVP (`ad.jvp_jaxpr`) in scan layout: (consts, const tangents, carry, carry
    tangents, xs, x tangents) -> (carry, carry tangents, ys, y tangents); tangents only where
    nonzero (carry tangents where `carry_nz`, instantiated). Also returns which outputs have
    tangents."""
    nc, nk = num_consts, num_carry
    nz_in = list(nonzeros[:nc]) + list(carry_nz) + list(nonzeros[nc + nk :])

    def build():
        ny = len(closed.out_avals) - nk
        jvp, out_nz = ad.jvp_jaxpr(closed, nz_in, list(carry_nz) + [False] * ny)
        j, n, n_out = jvp.jaxpr, len(nz_in), nk + ny
        t_in, t_out = iter(j.invars[n:]), iter(j.outvars[n_out:])
        t_in = [next(t_in) if nz else None for nz in nz_in]
        t_out = [next(t_out) if nz else None for nz in out_nz]
        invars = []
        for g in (range(0, nc), range(nc, nc + nk), range(nc + nk, n)):
            invars += [j.invars[i] for i in g] + [t_in[i] for i in g if nz_in[i]]
        outvars = [
            *j.outvars[:nk],
            *filter(None, t_out[:nk]),
            *j.outvars[nk:n_out],
            *filter(None, t_out[nk:]),
        ]
        return ClosedJaxpr(Jaxpr(j.constvars, invars, outvars, j.eqns), jvp.consts), out_nz

    return _cached("jvp", closed, (tuple(nonzeros), tuple(carry_nz), num_consts, num_carry), build)


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry, unroll):
    nc, nk = num_consts, num_carry
    nz = [_nonzero(t) for t in tangents]
    carry_nz = nz[nc : nc + nk]
    # Fixed point: a carry has a tangent if its initial value does or the body gives it one.
    for _ in range(nk + 1):
        body, raw = _jvp_body(jaxpr, nz, nc, nk, carry_nz)
        grown = [c or r for c, r in zip(carry_nz, raw[:nk])]
        if grown == carry_nz:
            break
        carry_nz = grown
    consts, init, xs = split_list(primals, nc, nk)
    ct, it, xt = split_list(tangents, nc, nk)
    const_t = [t for t, n in zip(ct, nz[:nc]) if n]
    init_t = [
        instantiate(t) if _nonzero(t) else zeros_like_aval(tangent_aval(get_aval(p)))
        for p, t, n in zip(init, it, carry_nz)
        if n
    ]
    xs_t = [t for t, n in zip(xt, nz[nc + nk :]) if n]
    outs = scan_p.bind(
        *consts, *const_t, *init, *init_t, *xs, *xs_t,
        jaxpr=body, length=length, reverse=reverse, num_consts=nc + len(const_t),
        num_carry=nk + len(init_t), unroll=unroll,
    )  # fmt: skip
    ys_nz = raw[nk:]
    ny = len(ys_nz)
    carry_p, carry_t, ys_p, ys_t = split_list(outs, nk, len(init_t), ny)
    out_avals = _out_avals(jaxpr, length, nk)
    carry_t, ys_t = iter(carry_t), iter(ys_t)
    out_t = [next(carry_t) if n else Zero(tangent_aval(a)) for n, a in zip(carry_nz, out_avals[:nk])]
    out_t += [next(ys_t) if n else Zero(tangent_aval(a)) for n, a in zip(ys_nz, out_avals[nk:])]
    return [*carry_p, *ys_p], out_t


scan_p.jvp = _scan_jvp


# ------------------------------------------------------------------------------ partial evaluation


def _varying(jaxpr: Jaxpr, loop_invars) -> set:
    """Ids of the variables that change from one iteration to the next (depend on `loop_invars`)."""
    varying = {id(v) for v in loop_invars}
    for eqn in jaxpr.eqns:
        if any(type(v) is not Literal and id(v) in varying for v in eqn.invars):
            varying.update(id(v) for v in eqn.outvars)
    return varying


def _slice_jaxpr(jaxpr: Jaxpr, invars, outvars) -> Jaxpr:
    """The equations of `jaxpr` needed for `outvars`, as a jaxpr taking `invars` (+ constvars)."""
    needed = {id(v) for v in outvars if type(v) is not Literal}
    eqns = []
    for eqn in reversed(jaxpr.eqns):
        if any(id(v) in needed for v in eqn.outvars):
            eqns.append(eqn)
            needed.update(id(v) for v in eqn.invars if type(v) is not Literal)
    return Jaxpr(jaxpr.constvars, invars, outvars, eqns[::-1])


def _scan_partial_eval(trace, args, params):
    jaxpr, length, reverse = params["jaxpr"], params["length"], params["reverse"]
    nc, nk, unroll = params["num_consts"], params["num_carry"], params["unroll"]
    ny = len(jaxpr.out_avals) - nk
    unknowns = [trace._owns(x) for x in args]
    const_uk, carry_uk, xs_uk = split_list(unknowns, nc, nk)
    # Fixed point: a carry is unknown if its initial value is or the body makes it so.
    for _ in range(nk + 1):
        known, unknown, out_uk, num_res = partial_eval_jaxpr(
            jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * ny
        )
        grown = [c or r for c, r in zip(carry_uk, out_uk[:nk])]
        if grown == carry_uk:
            break
        carry_uk = grown
    consts, init, xs = split_list(args, nc, nk)
    known_consts = [x for x, u in zip(consts, const_uk) if not u]
    known_init = [x for x, u in zip(init, carry_uk) if not u]
    known_xs = [x for x, u in zip(xs, xs_uk) if not u]
    nck, nkk = len(known_consts), len(known_init)

    # The unknown part as an open jaxpr whose constvars are the residuals.
    uj = unknown.jaxpr
    unknown = Jaxpr(uj.invars[:num_res], uj.invars[num_res:], uj.outvars, uj.eqns)
    # Residuals: loop-invariant ones are computed once, known xs are forwarded, the rest stacked.
    kj = known.jaxpr
    n_known_out = len(kj.outvars) - num_res
    res_out = kj.outvars[n_known_out:]
    varying = _varying(kj, kj.invars[nck:])
    xs_invar_pos = {id(v): j for j, v in enumerate(kj.invars[nck + nkk :])}
    kinds = []
    for r in res_out:
        if type(r) is Literal or id(r) not in varying:
            kinds.append("invariant")
        elif id(r) in xs_invar_pos:
            kinds.append("xs")
        else:
            kinds.append("stacked")
    res_vals = [None] * num_res
    inv = [i for i, k in enumerate(kinds) if k == "invariant"]
    with _trace.set_current_trace(trace.parent):
        if inv:
            hoisted = _slice_jaxpr(kj, kj.invars[:nck], [res_out[i] for i in inv])
            for i, v in zip(inv, eval_jaxpr(hoisted, known.consts, *known_consts)):
                res_vals[i] = v
        stacked = [i for i, k in enumerate(kinds) if k == "stacked"]
        body_k = ClosedJaxpr(
            Jaxpr(kj.constvars, kj.invars, kj.outvars[:n_known_out] + [res_out[i] for i in stacked], kj.eqns),
            known.consts,
        )
        if body_k.jaxpr.outvars:
            known_outs = scan_p.bind(
                *known_consts, *known_init, *known_xs,
                jaxpr=body_k, length=length, reverse=reverse, num_consts=nck, num_carry=nkk, unroll=unroll,
            )  # fmt: skip
        else:
            known_outs = []
    for i, v in zip(stacked, known_outs[n_known_out:]):
        res_vals[i] = v
    for i, k in enumerate(kinds):
        if k == "xs":
            res_vals[i] = known_xs[xs_invar_pos[id(res_out[i])]]

    # The unknown scan: [invariant residuals, unknown consts] [unknown carries] [loop residuals, unknown xs].
    loop = [i for i, k in enumerate(kinds) if k != "invariant"]
    ncu, nku = sum(const_uk), sum(carry_uk)
    uin = unknown.invars
    rv = unknown.constvars
    body_u = ClosedJaxpr(
        Jaxpr(
            [],
            [rv[i] for i in inv]
            + uin[:ncu]
            + uin[ncu : ncu + nku]
            + [rv[i] for i in loop]
            + uin[ncu + nku :],
            unknown.outvars,
            unknown.eqns,
        ),
        [],
    )
    operands = (
        [res_vals[i] for i in inv]
        + [x for x, u in zip(consts, const_uk) if u]
        + [x for x, u in zip(init, carry_uk) if u]
        + [res_vals[i] for i in loop]
        + [x for x, u in zip(xs, xs_uk) if u]
    )
    staged = []
    if unknown.outvars:
        uparams = dict(
            jaxpr=body_u,
            length=length,
            reverse=reverse,
            num_consts=len(inv) + ncu,
            num_carry=nku,
            unroll=unroll,
        )
        staged = StagingTrace.process_primitive(trace, scan_p, operands, uparams)
    known_it, staged_it = iter(known_outs[:n_known_out]), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in out_uk]


scan_p.partial_eval = _scan_partial_eval


# ------------------------------------------------------------------------------------ transposition


def _transpose_body(closed: ClosedJaxpr, nc, nk, const_lin, xs_lin, ys_nz):
    """The reverse body: (residual consts; const ct accumulators, carry cts; residual xs, y cts)
    -> (accumulators + this step's const cts, carry cts in; x cts)."""

    def build():
        body, avals = closed.jaxpr, closed.in_avals
        n = len(avals)
        res_c = [i for i in range(nc) if not const_lin[i]]
        lin_c = [i for i in range(nc) if const_lin[i]]
        res_x = [i for i in range(nc + nk, n) if not xs_lin[i - nc - nk]]
        lin_x = [i for i in range(nc + nk, n) if xs_lin[i - nc - nk]]
        carry = list(range(nc, nc + nk))
        y_avals = closed.out_avals[nk:]
        linear = Jaxpr(
            body.constvars + [body.invars[i] for i in res_c + res_x],
            [body.invars[i] for i in lin_c + carry + lin_x],
            body.outvars,
            body.eqns,
        )

        def fun(*args):
            res_cv, acc, ct_carry, res_xv, ct_y = split_list(args, len(res_c), len(lin_c), nk, len(res_x))
            ct_y = iter(ct_y)
            cts_out = list(ct_carry) + [
                next(ct_y) if nz else Zero(tangent_aval(a)) for nz, a in zip(ys_nz, y_avals)
            ]
            cts_in = ad.backward_pass(ClosedJaxpr(linear, list(closed.consts) + res_cv + res_xv), cts_out)
            ct_c, ct_k, ct_x = split_list(cts_in, len(lin_c), nk)
            return (
                [instantiate(add_tangents(a, c)) for a, c in zip(acc, ct_c)]
                + [instantiate(c) for c in ct_k]
                + [instantiate(c) for c in ct_x]
            )

        in_avals = (
            [avals[i] for i in res_c]
            + [tangent_aval(avals[i]) for i in lin_c + carry]
            + [avals[i] for i in res_x]
            + [tangent_aval(a) for a, nz in zip(y_avals, ys_nz) if nz]
        )
        return trace_to_jaxpr(fun, in_avals)

    return _cached("transpose", closed, (nc, nk, tuple(const_lin), tuple(xs_lin), tuple(ys_nz)), build)


def _scan_transpose(cts, *args, jaxpr, length, reverse, num_consts, num_carry, unroll):
    nc, nk = num_consts, num_carry
    consts, init, xs = split_list(args, nc, nk)
    ct_carry, ct_ys = cts[:nk], cts[nk:]
    const_lin = [is_undefined_primal(a) for a in consts]
    xs_lin = [is_undefined_primal(a) for a in xs]
    # Every carry is linear here: a known initial carry of a linear scan can only be zeros
    # (an instantiated tangent), whose cotangent nobody needs.
    ys_nz = [ct is not None and not is_zero(ct) for ct in ct_ys]
    body = _transpose_body(jaxpr, nc, nk, const_lin, xs_lin, ys_nz)
    body_in = jaxpr.in_avals
    acc0 = [zeros_like_aval(tangent_aval(body_in[i])) for i in range(nc) if const_lin[i]]
    carry0 = [
        zeros_like_aval(tangent_aval(body_in[nc + i])) if ct is None or is_zero(ct) else ct
        for i, ct in enumerate(ct_carry)
    ]
    outs = scan_p.bind(
        *[c for c, lin in zip(consts, const_lin) if not lin], *acc0, *carry0,
        *[x for x, lin in zip(xs, xs_lin) if not lin], *[ct for ct, nz in zip(ct_ys, ys_nz) if nz],
        jaxpr=body, length=length, reverse=not reverse, num_consts=nc - len(acc0),
        num_carry=len(acc0) + nk, unroll=unroll,
    )  # fmt: skip
    ct_consts, ct_init, ct_xs = split_list(outs, len(acc0), nk)
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return (
        [next(ct_consts) if lin else None for lin in const_lin]
        + [ct if is_undefined_primal(a) else None for a, ct in zip(init, ct_init)]
        + [next(ct_xs) if lin else None for lin in xs_lin]
    )


scan_p.transpose = _scan_transpose


# ------------------------------------------------------------------------------------------ batching


def _scan_batch(vals, dims, *, axis_data, jaxpr, length, reverse, num_consts, num_carry, unroll):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    consts, init, xs = split_list(vals, nc, nk)
    cd, kd, xd = split_list(dims, nc, nk)
    consts = [c if d is None else moveaxis(c, d, 0) for c, d in zip(consts, cd)]
    # xs keep the scanned axis first: their batch axis goes second, so each slice has it first.
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, xd)]
    const_b, xs_b = [d is not None for d in cd], [d is not None for d in xd]
    carry_b = [d is not None for d in kd]
    # Fixed point: a carry is batched if its initial value is or the body makes it so.
    for _ in range(nk + 1):
        in_dims = [0 if b else None for b in const_b + carry_b + xs_b]
        body, raw = batch_jaxpr(jaxpr, axis_data, in_dims, carry_b + [False] * ny)
        grown = [c or r for c, r in zip(carry_b, raw[:nk])]
        if grown == carry_b:
            break
        carry_b = grown
    init = [bdim_to_front(v, d, axis_data.size) if b else v for v, d, b in zip(init, kd, carry_b)]
    outs = scan_p.bind(
        *consts,
        *init,
        *xs,
        jaxpr=body,
        length=length,
        reverse=reverse,
        num_consts=nc,
        num_carry=nk,
        unroll=unroll,
    )
    out_dims = [0 if b else None for b in carry_b] + [1 if b else None for b in raw[nk:]]
    return outs, out_dims


scan_p.batch = _scan_batch


# ----------------------------------------------------------------------------------------------- DCE


def _scan_dce_rule(used_outputs, eqn):
    """Keep the used outputs and, by fixed point, every carry a kept output depends on."""
    from morphax._src.passes._util import eqn_has_effects
    from morphax._src.passes.dce import dce_closed_jaxpr

    p = eqn.params
    jaxpr, nc, nk = p["jaxpr"], p["num_consts"], p["num_carry"]
    if eqn_has_effects(eqn):
        return [True] * len(eqn.invars), eqn
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    used_carry, used_ys = list(used_outputs[:nk]), list(used_outputs[nk:])
    for _ in range(nk + 1):
        res, used_in = dce_closed_jaxpr(jaxpr, used_carry + used_ys, prune_invars=True)
        grown = [c or u for c, u in zip(used_carry, used_in[nc : nc + nk])]
        if grown == used_carry:
            break
        used_carry = grown
    keep = used_in[:nc] + used_carry + used_in[nc + nk :]
    if all(keep) and all(used_outputs):
        return keep, eqn
    full, _ = dce_closed_jaxpr(jaxpr, used_carry + used_ys, prune_invars=False)
    j = full.closed.jaxpr
    body = ClosedJaxpr(
        Jaxpr(j.constvars, [v for v, k in zip(j.invars, keep) if k], j.outvars, j.eqns, j.debug_info),
        full.closed.consts,
    )
    used_out = used_carry + used_ys
    new_eqn = eqn.replace(
        invars=[v for v, k in zip(eqn.invars, keep) if k],
        outvars=[v for v, u in zip(eqn.outvars, used_out) if u],
        params={**p, "jaxpr": body, "num_consts": sum(keep[:nc]), "num_carry": sum(used_carry)},
    )
    return keep, new_eqn


scan_p.dce_rule = _scan_dce_rule
