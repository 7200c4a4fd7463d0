"""`lax.cond` and `lax.switch`: the `cond` primitive, whose `branches` param holds one closed jaxpr
per branch, all taking the same operands (the branches' hoisted constants, then the user's operands)
and giving the same output types. Its rules transform every branch the same way; a batched index
turns the call into a `select_n` over all branches' outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import (
    Zero,
    aval_of,
    instantiate,
    is_undefined_primal,
    is_zero,
    tangent_aval,
    zeros_like_aval,
)
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var, eval_jaxpr, jaxpr_as_fun
from morphax._src.core.loop_form import LoopForm
from morphax._src.core.memo import MISSING, memo_get, memo_put
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.higher_order.host_eval import host_rules, run_as_program, run_closed_jaxpr
from morphax._src.higher_order.trace_cache import cached_trace
from morphax._src.passes._util import eqn_has_effects
from morphax._src.passes.dce import dce_closed_jaxpr
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims import lax_api as L
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_flat_fun, batch_jaxpr
from morphax._src.transforms.partial_eval import partial_eval_jaxpr
from morphax._src.transforms.staging import StagingTrace, fun_sourceinfo, trace_to_jaxpr

__all__ = ["cond", "switch", "cond_p"]

cond_p = Primitive("cond", multiple_results=True)
cond_p.stablehlo = hlo.cond
cond_p.kind = Kind.LOOP
cond_p.higher_order = True
cond_p.test_spec = None  # the generated matrix skips higher-order primitives; tests/control_flow covers it


# ------------------------------------------------------------------------------ small shared helpers

# Rule results are memoized on the first branch jaxpr (core/memo.py), so they are freed with the
# cond that carries it; the other branches are part of the key by identity and held by the entry,
# so a recycled id never hits.


def _cached(kind, branches, key, build):
    first, rest = branches[0], tuple(branches[1:])
    full_key = (kind, tuple(id(b) for b in rest), key)
    hit = memo_get(first, full_key)
    if hit is MISSING or not all(a is b for a, b in zip(hit[0], rest)):
        hit = memo_put(first, full_key, (rest, build()))
    return hit[1]


def _join_avals(branches):
    """The cond's output types: those of branch 0 (the false branch of a `cond`), weak types
    included, as JAX's cond abstract eval takes them. The branches agree on shape and dtype but
    may differ in weak type, so a weak int from `lambda: x` in the false branch stays weak beside
    a strong callback result (equinox's `error_if`)."""
    return list(branches[0].out_avals)


def _as_operand(x):
    # Python scalars become weakly typed arrays, so every operand has an array aval (as in JAX).
    if _dtypes.is_python_scalar(x):
        return make_array(x, _dtypes.python_scalar_dtype(x), weak_type=type(x) is not bool)
    return x


def _type_str(a: ShapedArray) -> str:
    return f"{a.dtype.name}[{','.join(str(d) for d in a.shape)}]"


# --------------------------------------------------------------------------------- the primitive


def _cond_host(args, *, branches):
    """The branch on NumPy values: only the selected branch runs (index clamped, as in JAX)."""
    index, *ops = args
    i = int(np.clip(int(np.asarray(index)), 0, len(branches) - 1))
    return run_closed_jaxpr(branches[i], ops)


host_rules[cond_p] = _cond_host


def _cond_loop_form(*, branches):
    n_ops, n_out = len(branches[0].in_avals), len(branches[0].out_avals)
    inputs = tuple(("operand", 1 + k) for k in range(n_ops))
    outputs = tuple(("result", k) for k in range(n_out))
    return LoopForm("switch", tuple(branches), (inputs,) * len(branches), (outputs,) * len(branches))


cond_p.loop_form = _cond_loop_form


def _cond_impl(index, *args, branches):
    in_avals = [get_aval(index), *branches[0].in_avals]
    return run_as_program(cond_p, [index, *args], in_avals, _join_avals(branches), {"branches": branches})


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _cond_abstract_eval(index, *args, branches):
    if not branches:
        raise TypeError("cond: needs at least one branch.")
    if index.shape != () or not _dtypes.is_integer(index.dtype):
        raise TypeError(f"cond: the branch index must be an integer scalar, got {index.str_short()}.")
    for k, b in enumerate(branches):
        ins = b.in_avals
        if len(ins) != len(args) or not all(_same_type(a, e) for a, e in zip(args, ins)):
            raise TypeError(
                f"cond: branch {k} takes operands of types {[a.str_short() for a in ins]} but the cond "
                f"passes {[a.str_short() for a in args]}."
            )
    first = branches[0].out_avals
    for k, b in enumerate(branches[1:], 1):
        outs = b.out_avals
        if len(outs) != len(first):
            raise TypeError(
                f"cond: branches must have equal output types, but branch 0 has {len(first)} outputs and "
                f"branch {k} has {len(outs)}."
            )
        diffs = [
            f"  output {j}: branch 0 has {a.str_short()}, branch {k} has {o.str_short()}"
            for j, (a, o) in enumerate(zip(first, outs))
            if not _same_type(a, o)
        ]
        if diffs:
            raise TypeError(
                "cond: branches must have equal output types, but they differ:\n" + "\n".join(diffs)
            )
    return _join_avals(branches)


cond_p.impl = _cond_impl
cond_p.abstract_eval = _cond_abstract_eval


# ------------------------------------------------------------------------------- tracing branches


def _trace_branch(fun, in_tree, in_avals):
    def trace():
        box = {}

        def flat(*args):
            out = fun(*pytree.tree_unflatten(in_tree, args))
            leaves, box["tree"] = pytree.tree_flatten(out)
            return [_as_operand(x) for x in leaves]

        closed = trace_to_jaxpr(flat, in_avals)
        return closed, box["tree"]

    # As in JAX, a branch function is traced once per argument structure and types: a cond
    # called again eagerly (or with the same function for both branches) reuses the trace.
    key = ("cond", in_tree, tuple(in_avals))
    return cached_trace((fun,), key, trace, lambda r: r[0].consts)


def _check_branch_outputs(api, names, funs, trees, avals):
    """Every branch must give the first one's pytree structure and leaf types (weak types may
    differ: the cond's output then has branch 0's). Errors name both branches and each leaf's path."""
    for k in range(1, len(funs)):
        n0, nk = names[0], names[k]

        def where(n0=n0, nk=nk, k=k):  # source lookups only when an error is raised
            return f"{n0} is {fun_sourceinfo(funs[0])}\n{nk} is {fun_sourceinfo(funs[k])}\n\n"

        if trees[k] != trees[0]:
            detail = None
            for a, b, na, nb in ((0, k, n0, nk), (k, 0, nk, n0)):
                try:
                    trees[a].flatten_up_to(pytree.tree_unflatten(trees[b], avals[b]))
                except ValueError as e:
                    detail = f"Matching {nb}'s output against {na}'s structure: {e}"
                    break
            raise TypeError(
                f"{api} branch outputs must have the same pytree structure, but they differ:\n\n{where()}"
                f"{n0} output structure: {trees[0]}\n{nk} output structure: {trees[k]}\n"
                + (f"{detail}\n" if detail else "")
                + f"\nRevise {n0} and/or {nk} so that they have the same pytree structure."
            )
        if all(_same_type(a, b) for a, b in zip(avals[0], avals[k])):
            continue
        paths = [p for p, _ in pytree.tree_flatten_with_path(pytree.tree_unflatten(trees[0], avals[0]))[0]]
        diffs = []
        for path, a, b in zip(paths, avals[0], avals[k]):
            if _same_type(a, b):
                continue
            what = " and ".join(
                w for w, bad in (("shapes", a.shape != b.shape), ("dtypes", a.dtype != b.dtype)) if bad
            )
            at = f" at path {pytree.keystr(path)}" if path else ""
            diffs.append(
                f"the output of {n0}{at} has type {_type_str(a)} but the corresponding output of {nk} has "
                f"type {_type_str(b)}, so the {what} do not match"
            )
        listed = (
            f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
            if len(diffs) == 1
            else "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
        )
        raise TypeError(
            f"{api} branches must have equal output types but they differ.\n\n{where()}{listed}\n"
            f"Revise {n0} and/or {nk} so that all output types match."
        )


def _hoist_consts(closed_branches):
    """Each branch's constants become leading operands shared by all branches (a branch ignores the
    others'), so values closed over from outer transformations are ordinary operands of the cond."""
    consts, slot_of, avals = [], {}, []
    for c in closed_branches:
        for v, x in zip(c.jaxpr.constvars, c.consts):
            if id(x) not in slot_of:
                slot_of[id(x)] = len(consts)
                consts.append(x)
                avals.append(v.aval)
    out = []
    for c in closed_branches:
        j = c.jaxpr
        slots = [None] * len(consts)
        for v, x in zip(j.constvars, c.consts):
            slots[slot_of[id(x)]] = v
        slots = [Var(a) if v is None else v for v, a in zip(slots, avals)]
        out.append(ClosedJaxpr(Jaxpr([], slots + j.invars, j.outvars, j.eqns), []))
    return out, consts


def _bind_cond(api, index, funs, names, operands):
    leaves, in_tree = pytree.tree_flatten(tuple(operands))
    leaves = [_as_operand(x) for x in leaves]
    in_avals = [get_aval(x) for x in leaves]
    traced = [_trace_branch(f, in_tree, in_avals) for f in funs]
    trees = [t for _, t in traced]
    _check_branch_outputs(api, names, funs, trees, [c.out_avals for c, _ in traced])
    branches, consts = _hoist_consts([c for c, _ in traced])
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(branches))
    return pytree.tree_unflatten(trees[0], outs)


# ---------------------------------------------------------------------------------------- public API

_no_operand = object()


def _is_concrete(x) -> bool:
    return not isinstance(x, Tracer)


def _with_operand_keyword(operands, operand):
    """The positional operands, or the one passed as JAX's deprecated `operand=` keyword."""
    if operand is _no_operand:
        return operands
    if operands:
        raise TypeError(
            "if 'operand' keyword is passed then no positional operands can be passed, got "
            f"operand={operand!r} and positional operands {operands!r}"
        )
    return (operand,)


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
    """``true_fun(*operands) if pred else false_fun(*operands)``, with one branch run.

    `pred` is a scalar bool or number (nonzero is true). Both branches are traced once and must give
    the same output structure and types. Under `vmap` with a batched `pred`, both branches run and a
    `select` picks each lane's result. The old form ``cond(pred, true_operand, true_fun,
    false_operand, false_fun)`` is accepted too.
    """
    if not (callable(true_fun) and callable(false_fun)):
        # The old signature: cond(pred, true_operand, true_fun, false_operand, false_fun).
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _with_operand_keyword(operands, operand)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        got = f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {np.shape(pred)}."
        raise TypeError(f"Pred must be a scalar, got {pred} of {got}")
    try:
        pred_dtype = get_aval(pred).dtype
    except TypeError as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if not _dtypes.is_bool(pred_dtype):
        if not (_dtypes.is_integer(pred_dtype) or _dtypes.is_floating(pred_dtype)):
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
        if _is_concrete(pred):
            pred = np.asarray(pred) != 0
        else:
            pred = L.ne(pred, make_array(0, pred_dtype, weak_type=True))
    if config.disable_jit and _is_concrete(pred):
        return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)
    index = L.convert_element_type(_as_operand(pred), np.int32)
    # branches[0] is the false branch, as in JAX (the index is int(pred)).
    return _bind_cond("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"), operands)


def switch(index, branches, *operands, operand=_no_operand):
    """``branches[clamp(0, index, len(branches) - 1)](*operands)``, with one branch run.

    Every branch is traced once and must give the same output structure and types. An out-of-range
    index is clamped (as in JAX). Under `vmap` with a batched index, every branch runs and a
    `select_n` picks each lane's result.
    """
    branches = tuple(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _with_operand_keyword(operands, operand)
    if len(np.shape(index)) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        index_dtype = get_aval(index).dtype
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if not _dtypes.is_integer(index_dtype):
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = L.convert_element_type(_as_operand(index), np.int32)
    index = L.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if config.disable_jit and _is_concrete(index):
        return branches[int(np.asarray(index))](*operands)
    names = tuple(f"branch {i}" for i in range(len(branches)))
    return _bind_cond("switch", index, branches, names, operands)


# ---------------------------------------------------------------------------------------------- JVP


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    nonzeros = [not is_zero(t) for t in tangents[1:]]
    patterns = [ad.jvp_jaxpr(b, nonzeros)[1] for b in branches]
    out_nz = [any(col) for col in zip(*patterns)]
    jvp_branches = tuple(ad.jvp_jaxpr(b, nonzeros, out_nz)[0] for b in branches)
    nz_tangents = [t for t in tangents[1:] if not is_zero(t)]
    outs = cond_p.bind(index, *ops, *nz_tangents, branches=jvp_branches)
    n_out = len(branches[0].out_avals)
    out_p, it = outs[:n_out], iter(outs[n_out:])
    out_avals = _join_avals(branches)
    out_t = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(out_avals, out_nz)]
    return out_p, out_t


cond_p.jvp = _cond_jvp


# ------------------------------------------------------------------------------- partial evaluation


def _join_residuals(branches, unknowns):
    """Split every branch, then make all branches agree: the same unknown outputs, and one residual
    list (the concatenation of all branches' residuals; a branch fills the others' with zeros)."""
    splits = [partial_eval_jaxpr(b, unknowns) for b in branches]
    out_uk = [any(col) for col in zip(*[s[2] for s in splits])]
    splits = [partial_eval_jaxpr(b, unknowns, out_uk) for b in branches]
    res_avals = [unknown.in_avals[:n_res] for _, unknown, _, n_res in splits]
    all_res = [a for avals in res_avals for a in avals]
    offsets = np.cumsum([0] + [len(r) for r in res_avals]).tolist()
    known_branches, unknown_branches = [], []
    for k, (known, unknown, _, n_own) in enumerate(splits):
        lo, hi = offsets[k], offsets[k + 1]

        def known_k(*args, known=known, lo=lo, hi=hi, n_res=n_own):
            outs = eval_jaxpr(known.jaxpr, known.consts, *args)
            vals, res = outs[: len(outs) - n_res], outs[len(outs) - n_res :]
            before = [zeros_like_aval(a) for a in all_res[:lo]]
            return vals + before + res + [zeros_like_aval(a) for a in all_res[hi:]]

        known_branches.append(trace_to_jaxpr(known_k, known.in_avals))
        uj = unknown.jaxpr
        own_res, rest = uj.invars[:n_own], uj.invars[n_own:]
        res_vars = [Var(a) for a in all_res[:lo]] + own_res + [Var(a) for a in all_res[hi:]]
        unknown_branches.append(ClosedJaxpr(Jaxpr([], res_vars + rest, uj.outvars, uj.eqns), []))
    return tuple(known_branches), tuple(unknown_branches), out_uk, len(all_res)


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    unknowns = [trace._owns(x) for x in args]
    if unknowns[0]:
        # An unknown index: nothing can be chosen now, so the whole cond is staged.
        return StagingTrace.process_primitive(trace, cond_p, args, params)
    index, ops, op_uk = args[0], args[1:], unknowns[1:]
    known_b, unknown_b, out_uk, n_res = _cached(
        "cond_pe", branches, ("join", tuple(op_uk)), lambda: _join_residuals(branches, op_uk)
    )
    n_known = out_uk.count(False)
    known_outs = []
    if n_known + n_res:
        with _trace.set_current_trace(trace.parent):
            known_outs = cond_p.bind(index, *[x for x, u in zip(ops, op_uk) if not u], branches=known_b)
    known_vals, residuals = known_outs[:n_known], known_outs[n_known:]
    staged = []
    if any(out_uk):
        unknown_ops = [x for x, u in zip(ops, op_uk) if u]
        staged = StagingTrace.process_primitive(
            trace, cond_p, [index, *residuals, *unknown_ops], {"branches": unknown_b}
        )
    known_it, staged_it = iter(known_vals), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in out_uk]


cond_p.partial_eval = _cond_partial_eval


# ------------------------------------------------------------------------------------- transposition


def _transpose_branch(closed: ClosedJaxpr, linear, ct_avals):
    """(non-linear operands, nonzero output cotangents) -> dense cotangents of the linear operands.
    `ct_avals[j]` is None where output j's cotangent is a symbolic zero."""

    def build():
        j = closed.jaxpr
        known = [v for v, lin in zip(j.invars, linear) if not lin]
        lin_vars = [v for v, lin in zip(j.invars, linear) if lin]
        body = Jaxpr(j.constvars + known, lin_vars, j.outvars, j.eqns)
        n_res = len(known)
        out_avals = closed.out_avals

        def fun(*args):
            res, it = args[:n_res], iter(args[n_res:])
            cts = [Zero(tangent_aval(o)) if a is None else next(it) for o, a in zip(out_avals, ct_avals)]
            cts_in = ad.backward_pass(ClosedJaxpr(body, list(closed.consts) + list(res)), cts)
            return [instantiate(ct) for ct in cts_in]

        return trace_to_jaxpr(fun, [v.aval for v in known] + [a for a in ct_avals if a is not None])

    return _cached("cond_transpose", (closed,), (tuple(linear), tuple(ct_avals)), build)


def _cond_transpose(cts, index, *args, branches):
    if is_undefined_primal(index):
        raise ValueError("cond: the branch index cannot be a linear input of a transpose.")
    linear = [is_undefined_primal(a) for a in args]
    if all(is_zero(ct) for ct in cts):
        return [None] + [Zero(a.aval) if lin else None for a, lin in zip(args, linear)]
    ct_avals = [None if is_zero(ct) else aval_of(ct) for ct in cts]
    t_branches = tuple(_transpose_branch(b, linear, ct_avals) for b in branches)
    res = [a for a, lin in zip(args, linear) if not lin]
    outs = cond_p.bind(index, *res, *[ct for ct in cts if not is_zero(ct)], branches=t_branches)
    it = iter(outs)
    return [None] + [next(it) if lin else None for lin in linear]


cond_p.transpose = _cond_transpose


# -------------------------------------------------------------------------------------------- batching


def _cond_batch(vals, dims, *, axis_data, branches):
    index, idim = vals[0], dims[0]
    ops, op_dims = vals[1:], dims[1:]
    if idim is None:
        patterns = [batch_jaxpr(b, axis_data, op_dims)[1] for b in branches]
        out_b = [any(col) for col in zip(*patterns)]
        batched = tuple(batch_jaxpr(b, axis_data, op_dims, out_b)[0] for b in branches)
        return cond_p.bind(index, *ops, branches=batched), [0 if b else None for b in out_b]
    # A batched index: each lane may take a different branch, so every branch runs on every lane
    # and select_n picks per lane. A branch sees its inexact operands through stop_gradient on the
    # lanes that do not select it, so no gradient (NaN or not) flows back through a discarded branch.
    size = axis_data.size
    index = moveaxis(index, idim, 0)
    ops = [bdim_to_front(x, d, size) for x, d in zip(ops, op_dims)]
    branch_outs = []
    for k, b in enumerate(branches):
        selected = L.eq(index, np.int32(k))
        ops_k = [_select_lanes(selected, x) for x in ops]
        branch_outs.append(batch_flat_fun(jaxpr_as_fun(b), axis_data, [0] * len(ops_k))(*ops_k))
    outs = []
    for cases in zip(*branch_outs):
        shape = get_aval(cases[0]).shape
        which = index if len(shape) == 1 else L.broadcast_in_dim(index, shape, (0,))
        outs.append(L.select_n(which, *cases))
    return outs, [0] * len(outs)


def _select_lanes(selected, x):
    if not _dtypes.is_inexact(get_aval(x).dtype):
        return x
    shape = get_aval(x).shape
    which = selected if len(shape) == 1 else L.broadcast_in_dim(selected, shape, (0,))
    return L.select_n(which, L.stop_gradient(x), x)


cond_p.batch = _cond_batch


# -------------------------------------------------------------------------------------------------- DCE


def _cond_dce_rule(used_outputs, eqn):
    """Unused outputs leave every branch; an operand stays while any branch still reads it."""
    if not any(used_outputs) and not eqn_has_effects(eqn):
        return [False] * len(eqn.invars), None
    branches = eqn.params["branches"]
    n_ops = len(eqn.invars) - 1
    reads = [dce_closed_jaxpr(b, used_outputs, prune_invars=True)[1] for b in branches]
    used_ops = [any(r[i] for r in reads) for i in range(n_ops)]
    reduced = [dce_closed_jaxpr(b, used_outputs, prune_invars=False)[0] for b in branches]
    if all(used_outputs) and all(used_ops) and not any(r.changed for r in reduced):
        return [True] * len(eqn.invars), eqn
    new_branches = []
    for res in reduced:
        j = res.closed.jaxpr
        invars = [v for v, u in zip(j.invars, used_ops) if u]
        new_branches.append(ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), res.closed.consts))
    new_eqn = eqn.replace(
        invars=[eqn.invars[0]] + [v for v, u in zip(eqn.invars[1:], used_ops) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params={**eqn.params, "branches": tuple(new_branches)},
    )
    return [True] + used_ops, new_eqn


cond_p.dce_rule = _cond_dce_rule
