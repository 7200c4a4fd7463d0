"""`sparsify`: run a function written for dense arrays on sparse arrays.

The function is traced to a jaxpr with each sparse argument standing in as a dense array of its
shape and dtype; the jaxpr is then evaluated equation by equation, with the sparse values kept
sparse: an equation whose operands are all dense binds its primitive as usual, one with a sparse
operand goes to that primitive's sparse rule below (a composition of the BCOO operations). An
operation without a rule raises NotImplementedError naming the primitive. Because evaluation
binds ordinary primitives, `sparsify` composes with jit, grad and vmap around it.
"""

from __future__ import annotations

import functools

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.tracing import make_jaxpr
from morphax._src.core.jaxpr import Literal
from morphax._src.tree_util import tree_flatten, tree_structure, tree_unflatten
from morphax.experimental.sparse import _bcoo_ops as O
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse.bcoo import (
    BCOO,
    bcoo_dot_general,
    bcoo_multiply_sparse,
    bcoo_sum_duplicates,
    bcoo_transpose,
    multiply_dense,
)
from morphax.experimental.sparse.bcsr import BCSR


class SparseTracer:
    """JAX's tracer type of `sparsify(use_tracer=True)`. morphax's `sparsify` evaluates a jaxpr
    with sparse values instead of tracing with a special tracer, so no value of this type is
    created; the name exists for code that refers to it."""


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _as_bcoo(x):
    if isinstance(x, BCSR):
        return x.to_bcoo()
    if isinstance(x, JAXSparse) and not isinstance(x, BCOO):
        return BCOO.fromdense(x.todense())
    return x


def sparsify(f, use_tracer=False):
    """`f` made to accept sparse arrays (BCOO, BCSR) wherever it takes arrays; sparse results
    come back as BCOO. `use_tracer` is accepted for JAX's signature (results are the same)."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves, tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
        leaves = [_as_bcoo(x) for x in leaves]
        stand_ins = [morphax.ShapeDtypeStruct(x.shape, x.dtype) if _is_sparse(x) else x for x in leaves]

        def dense_fn(*flat):
            a, k = tree_unflatten(tree, flat)
            return f(*a, **k)

        closed, out_shape = make_jaxpr(dense_fn, return_shape=True)(*stand_ins)
        outs = eval_sparse_jaxpr(closed.jaxpr, closed.consts, leaves)
        return tree_unflatten(tree_structure(out_shape), outs)

    return wrapped


def eval_sparse_jaxpr(jaxpr, consts, args):
    env = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        prim = eqn.primitive
        if not any(_is_sparse(x) for x in ins):
            out = prim.bind(*ins, **eqn.params)
            outs = list(out) if prim.multiple_results else [out]
        else:
            outs = _apply_rule(prim, ins, eqn.params)
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


# ------------------------------------------------------------------------------------- rules

_CALLS = {
    "jit": "jaxpr",
    "remat2": "jaxpr",
    "closed_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
}

# Elementwise functions with f(0) = 0 that are linear: applied to the data as it is.
_LINEAR_UNARY = {"neg", "real", "imag", "conj", "copy", "copy_p", "convert_element_type", "reduce_precision"}
# Zero-preserving nonlinear functions: duplicate indices must be summed first.
_ZERO_PRESERVING = {
    "sin",
    "sinh",
    "tan",
    "tanh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "abs",
    "sign",
    "sqrt",
    "cbrt",
    "expm1",
    "log1p",
    "erf",
    "erf_inv",
    "floor",
    "ceil",
    "round",
    "square",
    "stop_gradient",
}


def _unary(prim, x, params, linear):
    if not linear and not x.unique_indices:
        x = bcoo_sum_duplicates(x, nse=x.nse)
    data = prim.bind(x.data, **params)
    return BCOO(
        (data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted, unique_indices=x.unique_indices
    )


def _apply_rule(prim, ins, params):
    name = prim.name
    if name in _CALLS:
        inner = params[_CALLS[name]]
        jaxpr, consts = (inner.jaxpr, inner.consts) if hasattr(inner, "consts") else (inner, ())
        return eval_sparse_jaxpr(jaxpr, consts, ins)
    if name in _LINEAR_UNARY or name in _ZERO_PRESERVING:
        return [_unary(prim, ins[0], params, name in _LINEAR_UNARY)]
    if name == "integer_pow":
        if params["y"] <= 0:
            raise NotImplementedError(
                f"sparse rule for integer_pow with non-positive exponent {params['y']} is not implemented "
                "because it would result in dense output."
            )
        return [_unary(prim, ins[0], params, False)]
    if name in _CONTROL:
        return _CONTROL[name](ins, **params)
    rule = _RULES.get(name)
    if rule is None:
        raise NotImplementedError(
            f"sparse rule for {name} is not implemented. Use sparse.todense() to convert the "
            "arguments of this operation to dense arrays."
        )
    return [rule(*ins, **params)]


def _mul(x, y):
    if _is_sparse(x) and _is_sparse(y):
        return bcoo_multiply_sparse(x, y)
    sp, d = (x, y) if _is_sparse(x) else (y, x)
    return multiply_dense(sp, d)


def _div(x, y):
    if _is_sparse(y):
        raise NotImplementedError(
            "sparse rule for div is not implemented for a sparse divisor (dense output)"
        )
    return multiply_dense(x, 1 / jnp.asarray(y))


def _add(x, y):
    if _is_sparse(x) and _is_sparse(y):
        if x.shape != y.shape:
            raise NotImplementedError("Addition between sparse matrices of different shapes.")
        return O.bcoo_add(x, y)
    raise NotImplementedError(
        "sparse rule for add is not implemented for a sparse and a dense operand because it would "
        "result in dense output. Use sparse.todense() if this is your intent."
    )


def _sub(x, y):
    if _is_sparse(x) and _is_sparse(y):
        return _add(x, -y)
    raise NotImplementedError("Subtraction between sparse and dense array.")


def _dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type=None, **_):
    return bcoo_dot_general(
        lhs, rhs, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type
    )


def _transpose(x, *, permutation):
    return bcoo_transpose(x, permutation=permutation)


def _reduce_sum(x, *, axes, **_):
    return O.bcoo_reduce_sum(x, axes=axes)


def _reshape(x, *, new_sizes, dimensions=None, **_):
    return O.bcoo_reshape(x, new_sizes=new_sizes, dimensions=dimensions)


def _squeeze(x, *, dimensions):
    return O.bcoo_squeeze(x, dimensions=dimensions)


def _broadcast_in_dim(x, *, shape, broadcast_dimensions, **_):
    return O.bcoo_broadcast_in_dim(x, shape=shape, broadcast_dimensions=broadcast_dimensions)


def _concatenate(*xs, dimension):
    if all(_is_sparse(x) for x in xs):
        return O.bcoo_concatenate(xs, dimension=dimension)
    raise NotImplementedError(
        "sparse rule for concatenate is not implemented for mixed sparse and dense operands"
    )


def _slice(x, *, start_indices, limit_indices, strides=None):
    return O.bcoo_slice(x, start_indices=start_indices, limit_indices=limit_indices, strides=strides)


def _dynamic_slice(x, *starts, slice_sizes, **_):
    return O.bcoo_dynamic_slice(x, starts, slice_sizes)


def _rev(x, *, dimensions):
    return O.bcoo_rev(x, dimensions)


def _parts(closed):
    return (closed.jaxpr, closed.consts) if hasattr(closed, "consts") else (closed, ())


def _same_structure(new, old, where):
    """`new` (a loop body's or branch's results) in `old`'s sparse structure: the sparsity
    pattern's size (nse) must stay the same, as a loop carry's shape must; the index flags are
    reset to what both can promise."""
    out = []
    for n, o in zip(new, old):
        if _is_sparse(o) != _is_sparse(n):
            raise NotImplementedError(f"sparsify: {where} turns a sparse value dense or a dense one sparse")
        if _is_sparse(o):
            if (n.data.shape, n.indices.shape) != (o.data.shape, o.indices.shape):
                raise NotImplementedError(
                    f"sparsify: {where} changes the number of stored elements of a sparse value "
                    f"({o.nse} -> {n.nse}); a loop carry or branch result keeps its sparsity structure"
                )
            n = BCOO((n.data, n.indices), shape=n.shape)
        out.append(n)
    return out


def _relax(vals):
    return [BCOO((v.data, v.indices), shape=v.shape) if _is_sparse(v) else v for v in vals]


def _while(ins, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, init = (
        ins[:cond_nconsts],
        ins[cond_nconsts : cond_nconsts + body_nconsts],
        ins[cond_nconsts + body_nconsts :],
    )
    init = _relax(init)

    def cond(carry):
        return eval_sparse_jaxpr(*_parts(cond_jaxpr), [*cconsts, *carry])[0]

    def body(carry):
        return _same_structure(
            eval_sparse_jaxpr(*_parts(body_jaxpr), [*bconsts, *carry]), carry, "a while_loop body"
        )

    return list(lax.while_loop(cond, body, init))


def _cond(ins, *, branches, **_):
    index, operands = ins[0], ins[1:]
    fns = [functools.partial(lambda b, ops: _relax(eval_sparse_jaxpr(*_parts(b), ops)), b) for b in branches]
    return list(lax.switch(index, fns, list(operands)))


def _scan(ins, *, jaxpr, length, num_consts, num_carry, reverse, unroll, **_):
    consts, init, xs = (
        ins[:num_consts],
        _relax(ins[num_consts : num_consts + num_carry]),
        ins[num_consts + num_carry :],
    )
    if any(_is_sparse(x) for x in xs):
        raise NotImplementedError(
            "sparsify: scanning over a sparse array is not supported (only carries and constants)"
        )

    def body(carry, x):
        out = eval_sparse_jaxpr(*_parts(jaxpr), [*consts, *carry, *x])
        new_carry = _same_structure(out[:num_carry], carry, "a scan body")
        ys = out[num_carry:]
        if any(_is_sparse(y) for y in ys):
            raise NotImplementedError(
                "sparsify: a scan body producing sparse per-step outputs is not supported"
            )
        return new_carry, ys

    carry, ys = lax.scan(body, init, list(xs), length=length, reverse=reverse, unroll=unroll)
    return [*carry, *ys]


_CONTROL = {"while": _while, "cond": _cond, "scan": _scan}


def _gather(
    x,
    idx,
    *,
    dimension_numbers,
    slice_sizes,
    unique_indices=False,
    indices_are_sorted=False,
    mode=None,
    fill_value=None,
):
    if _is_sparse(idx):
        raise NotImplementedError("sparse rule for gather is not implemented for sparse indices")
    return O.bcoo_gather(
        x,
        idx,
        dimension_numbers,
        slice_sizes,
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
        mode=mode,
        fill_value=fill_value,
    )


_RULES = {
    "gather": _gather,
    "mul": _mul,
    "div": _div,
    "add": _add,
    "add_any": _add,
    "sub": _sub,
    "dot_general": _dot_general,
    "transpose": _transpose,
    "reduce_sum": _reduce_sum,
    "reshape": _reshape,
    "squeeze": _squeeze,
    "broadcast_in_dim": _broadcast_in_dim,
    "concatenate": _concatenate,
    "slice": _slice,
    "dynamic_slice": _dynamic_slice,
    "rev": _rev,
}


O.register_sparsify(sparsify)
