"""`lax.scaled_dot`: `(lhs * lhs_scale) @ (rhs * rhs_scale)` with block ("subchannel") scales
along the contracting dimension, as JAX defines it. Composed from primitives in the order XLA's
CPU decomposition uses (operands and scales rounded to bfloat16, scaled in bfloat16, accumulated
in float32 by `dot_general`): bfloat16 results equal JAX's on CPU bit for bit, float32 ones up to
the order of the float32 accumulation."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims.arithmetic import mul
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.dot import dot_general
from morphax._src.prims.shape import broadcast_in_dim, reshape

__all__ = ["scaled_dot"]


def _default_dimension_numbers(ndim):
    if ndim == 2:
        return (((1,), (0,)), ((), ()))
    if ndim == 3:
        return (((2,), (1,)), ((0,), (0,)))
    raise ValueError(
        f"scaled_dot: dimension_numbers can only be left out for 2-D or 3-D operands, got {ndim}-D; "
        "pass dimension_numbers=((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))."
    )


def _apply_scale(x, scale, contracting, what):
    """x (bfloat16) times `scale` repeated along the contracting dimension, in bfloat16."""
    x = convert_element_type(x, _dtypes.bfloat16)
    if scale is None:
        return x
    scale = as_lax_array(scale)
    xs, ss = get_aval(x).shape, get_aval(scale).shape
    if len(ss) != len(xs):
        raise TypeError(f"scaled_dot: {what}_scale must have the rank of {what} ({len(xs)}), got shape {ss}")
    (k,) = contracting
    for d, (a, b) in enumerate(zip(xs, ss)):
        if d != k and a != b:
            raise TypeError(
                f"scaled_dot: {what}_scale {ss} must match {what} {xs} outside the contracting dimension {k}"
            )
    if ss[k] == 0 or xs[k] % ss[k]:
        raise TypeError(
            f"scaled_dot: {what}'s contracting size {xs[k]} must be a multiple of {what}_scale's {ss[k]}"
        )
    block = xs[k] // ss[k]
    # Repeat each scale `block` times: insert a block axis after k, broadcast, then merge.
    expanded = ss[: k + 1] + (block,) + ss[k + 1 :]
    dims = tuple(d if d <= k else d + 1 for d in range(len(ss)))
    scale = broadcast_in_dim(convert_element_type(scale, _dtypes.bfloat16), expanded, dims)
    return mul(x, reshape(scale, xs))


def scaled_dot(
    lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None, preferred_element_type=None
):
    """`dot_general` of block-scaled operands; the result has `preferred_element_type`
    (default bfloat16). Scales have the operands' shapes except along the contracting dimension,
    which the operand's size must be a multiple of."""
    lhs, rhs = as_lax_array(lhs), as_lax_array(rhs)
    if dimension_numbers is None:
        dimension_numbers = _default_dimension_numbers(get_aval(lhs).ndim)
    (lc, rc), _ = dimension_numbers
    if len(lc) != 1 or len(rc) != 1:
        raise ValueError(
            f"scaled_dot: exactly one contracting dimension per operand, got {dimension_numbers}"
        )
    out_dtype = (
        _dtypes.bfloat16
        if preferred_element_type is None
        else _dtypes.canonicalize_dtype(preferred_element_type)
    )
    lhs = _apply_scale(lhs, lhs_scale, tuple(lc), "lhs")
    rhs = _apply_scale(rhs, rhs_scale, tuple(rc), "rhs")
    out = dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32)
    return convert_element_type(out, out_dtype)
