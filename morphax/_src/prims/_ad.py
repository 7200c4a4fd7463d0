"""Helpers that make derivative rules one line each: per-operand JVP partials, linear primitives,
zero-derivative primitives, and the broadcasting bookkeeping transposes need.

Rule conventions (every primitive block follows them):
  prim.jvp(primals, tangents, **params) -> (primal_out, tangent_out)
      tangents may be `Zero`; runs on the parent trace, so it is written with lax functions.
  prim.transpose(cts, *args, **params) -> one entry per arg
      `args` holds `UndefinedPrimal` for the linear inputs and values for the others; return a
      cotangent (or `Zero`/None) for each UndefinedPrimal and None for the others. For primitives
      with one result `cts` is that result's cotangent; for several it is a list (may hold Zero).
"""

from __future__ import annotations

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import structural
from morphax._src.core.ad_util import (
    UndefinedPrimal,
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


def broadcast_to_shape(x, shape):
    """Broadcast under lax's rule (rank-0 operands, or equal rank with size-1 axes) to `shape`."""
    shape = tuple(shape)
    xs = aval_of(x).shape
    if xs == shape:
        return x
    if not xs:
        return structural.broadcast_in_dim(x, shape, ())
    keep = tuple(i for i, d in enumerate(xs) if d == shape[i])
    if len(keep) != len(xs):
        x = structural.reshape(x, tuple(xs[i] for i in keep))
    return structural.broadcast_in_dim(x, shape, keep)


def unbroadcast(aval: ShapedArray, x):
    """Sum `x` down to `aval`'s shape: the transpose of lax's implicit broadcasting."""
    if is_zero(x):
        return x
    xs = aval_of(x).shape
    if xs == aval.shape:
        return x
    if not aval.shape:
        return structural.reduce_sum(x, tuple(range(len(xs))))
    dims = tuple(i for i, (a, b) in enumerate(zip(aval.shape, xs)) if a != b)
    summed = structural.reduce_sum(x, dims)
    return structural.reshape(summed, aval.shape)


def linear_operand_ct(operand, ct):
    """The cotangent of one operand of a linear elementwise op: None for a known (non-linear)
    operand, else `ct` summed down to the operand's shape (a symbolic Zero stays one)."""
    if not is_undefined_primal(operand):
        return None
    if is_zero(ct):
        return Zero(operand.aval)
    return unbroadcast(operand.aval, ct)


def _out_tangent_aval(out):
    return tangent_aval(get_aval(out))


def defjvp(prim, *partials):
    """JVP from one partial per operand: ``partial(g, ans, *primals, **params)`` gives operand i's
    contribution for its tangent ``g`` (None: the output does not depend differentiably on it).
    Contributions are broadcast to the output shape and summed; Zero tangents cost nothing."""

    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out_t = _out_tangent_aval(ans)
        if out_t.dtype == _dtypes.float0:
            return ans, Zero(out_t)
        acc = None
        for partial, t in zip(partials, tangents):
            if partial is None or is_zero(t):
                continue
            contrib = broadcast_to_shape(partial(t, ans, *primals, **params), out_t.shape)
            acc = contrib if acc is None else structural.add(acc, contrib)
        return ans, (Zero(out_t) if acc is None else acc)

    prim.jvp = jvp
    return jvp


def defjvp_zero(prim):
    """A primitive with zero derivative everywhere it is defined (floor, sign, comparisons...)."""

    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [Zero(_out_tangent_aval(a)) for a in ans]
        return ans, Zero(_out_tangent_aval(ans))

    prim.jvp = jvp
    prim.differentiable = False
    return jvp


def deflinear(prim, transpose_rule):
    """A primitive linear in all its operands: its JVP applies it to the tangents."""

    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            if prim.multiple_results:
                return ans, [Zero(_out_tangent_aval(a)) for a in ans]
            return ans, Zero(_out_tangent_aval(ans))
        return ans, prim.bind(*[instantiate(t) for t in tangents], **params)

    prim.jvp = jvp
    prim.transpose = transpose_rule
    return jvp


def defbilinear(prim, transpose_rule):
    """A primitive linear in each of its two operands separately (dot_general, convolutions):
    its JVP is prim(t_lhs, rhs) + prim(lhs, t_rhs), skipping zero tangents; `transpose_rule`
    gives the cotangent of whichever operand is the linear input."""

    def jvp(primals, tangents, **params):
        lhs, rhs = primals
        t_lhs, t_rhs = tangents
        ans = prim.bind(lhs, rhs, **params)
        out = tangent_aval(get_aval(ans))
        if out.dtype == _dtypes.float0:
            return ans, Zero(out)
        out_t = Zero(out)
        if not is_zero(t_lhs):
            out_t = prim.bind(t_lhs, rhs, **params)
        if not is_zero(t_rhs):
            out_t = add_tangents(out_t, prim.bind(lhs, t_rhs, **params))
        return ans, out_t

    prim.jvp = jvp
    prim.transpose = transpose_rule
    return jvp


def linear_in_first(prim, transpose_rule):
    """Linear in operand 0, with the remaining operands (indices, sizes) non-differentiable:
    the tangent is the primitive applied to the first tangent with the other primals."""

    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        t = tangents[0]
        if is_zero(t):
            return ans, Zero(_out_tangent_aval(ans))
        return ans, prim.bind(t, *primals[1:], **params)

    prim.jvp = jvp
    prim.transpose = transpose_rule
    return jvp


__all__ = [
    "defbilinear",
    "UndefinedPrimal",
    "Zero",
    "add_tangents",
    "aval_of",
    "broadcast_to_shape",
    "defjvp",
    "defjvp_zero",
    "deflinear",
    "instantiate",
    "is_undefined_primal",
    "is_zero",
    "linear_in_first",
    "linear_operand_ct",
    "unbroadcast",
    "zeros_like_aval",
]
