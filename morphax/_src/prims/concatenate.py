"""Joining and splitting along an axis: the `concatenate` and `split` primitives (each the other's transpose), with all their rules."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core.ad_util import Zero, aval_of, instantiate, is_undefined_primal, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import deflinear
from morphax._src.prims._shape_util import (
    SHAPE_DTYPES,
    _axes_cases,
    as_lax_array,
    canonical_axis,
    fresh,
    is_array,
)
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.builders import same_dtypes
from morphax._src.prims.shape import broadcast_in_dim
from morphax._src.prims.slicing import slice_p

__all__ = [
    "concatenate",
    "concatenate_p",
    "split",
    "split_p",
]


# ------------------------------------------------------------------------------------------------
# split: consecutive pieces of `sizes` along `axis`.

split_p = Primitive("split", multiple_results=True)
# Data movement into several results (each a slice): no single-result index_map.
split_p.kind = Kind.LAYOUT


def _split_stablehlo(ctx, x, *, sizes, axis):
    # One slice per piece, as JAX lowers split.
    outs, start = [], 0
    for size, aval in zip(sizes, ctx.avals_out):
        lo, hi = [0] * len(x.shape), list(x.shape)
        lo[axis], hi[axis] = start, start + size
        attrs = {"start_indices": hlo.i64_array(lo), "limit_indices": hlo.i64_array(hi)}
        attrs["strides"] = hlo.i64_array([1] * len(lo))
        outs.append(ctx.op1("stablehlo.slice", [x], aval, attrs))
        start += size
    return outs


split_p.stablehlo = _split_stablehlo


def _split_abstract_eval(x, *, sizes, axis):
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < x.ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for an operand of type {x.str_short()}")
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if x.shape[axis] != sum(sizes):
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape {list(x.shape)}"
        )
    return [x.update(shape=x.shape[:axis] + (s,) + x.shape[axis + 1 :]) for s in sizes]


def _split_impl(x, *, sizes, axis):
    return [fresh(p) for p in np.split(x, np.cumsum(sizes)[:-1].astype(int), axis=axis)]


def _split_transpose(cts, x, *, sizes, axis):
    if all(is_zero(ct) for ct in cts):
        return [Zero(x.aval)]
    return [concatenate([instantiate(ct) for ct in cts], axis)]


def _split_cases(rng):
    out = []
    configs = (
        ((5,), (2, 3), 0),
        ((2, 4), (1, 3), 1),
        ((4, 3), (0, 4, 0), 0),
        ((2, 6, 1), (2, 2, 2), 1),
        ((3,), (3,), 0),
        ((0, 2), (0,), 0),
        ((2, 5), (5,), 1),
    )
    for dt in ("float32", "int32", "bool", "complex64", "bfloat16"):
        for shape, sizes, axis in configs:
            x = random_array(rng, shape, dt)
            out.append(Case((x,), {"sizes": sizes, "axis": axis}, f"{dt}{list(shape)}{sizes}@{axis}"))
    return out


split_p.abstract_eval = _split_abstract_eval
split_p.impl = _split_impl
split_p.test_spec = TestSpec(cases=_split_cases)
split_p.batch = lambda vals, dims, *, axis_data, sizes, axis: (
    split_p.bind(vals[0], sizes=sizes, axis=axis + (axis >= dims[0])),
    [dims[0]] * len(sizes),
)

deflinear(split_p, _split_transpose)


def split(operand, sizes, axis=0):
    """Split `operand` along `axis` into consecutive pieces of the given `sizes` (which sum to the
    axis length)."""
    operand = as_lax_array(operand)
    axis = canonical_axis(axis, len(get_aval(operand).shape), "split")
    sizes = tuple(operator.index(s) for s in sizes)
    return split_p.bind(operand, sizes=sizes, axis=axis)


# --------------------------------------------------------------------------------------- concatenate


def _concatenate_abstract_eval(*xs, dimension):
    name = "concatenate"
    shapes = ", ".join(str(x.shape) for x in xs)
    if not xs:
        raise TypeError(f"{name} expects at least one operand, got 0.")
    if len({x.ndim for x in xs}) != 1:
        raise TypeError(
            f"{name}: cannot concatenate arrays with different numbers of dimensions: got {shapes}."
        )
    if not isinstance(dimension, (int, np.integer)) or not 0 <= dimension < xs[0].ndim:
        raise TypeError(
            f"{name}: dimension {dimension!r} is out of bounds for shapes {shapes} (must be in [0, {xs[0].ndim}); "
            "scalars cannot be concatenated)."
        )
    rest = [x.shape[:dimension] + x.shape[dimension + 1 :] for x in xs]
    if any(r != rest[0] for r in rest[1:]):
        raise TypeError(
            f"{name}: cannot concatenate arrays whose shapes differ in dimensions other than the one being "
            f"concatenated: concatenating along dimension {dimension} for shapes {shapes}."
        )
    dt = same_dtypes(name, xs)
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), dt, all(x.weak_type for x in xs))


def _concatenate_piecewise_map(out_index, *xs, dimension):
    """Along `dimension`, operand k covers [offset_k, offset_k + size_k), read at i - offset_k."""
    pieces, offset = [], 0
    i = out_index[dimension]
    for k, x in enumerate(xs):
        n = x.shape[dimension]
        index = tuple(i - offset if d == dimension else j for d, j in enumerate(out_index))
        pieces.append((k, ((i, offset, offset + n, 1),), index))
        offset += n
    return pieces, None


concatenate_p = Primitive("concatenate")
concatenate_p.stablehlo = hlo.concatenate
concatenate_p.impl = lambda *xs, dimension: np.concatenate(xs, axis=dimension)
concatenate_p.abstract_eval = _concatenate_abstract_eval
# Data movement whose source operand depends on the index.
concatenate_p.kind = Kind.LAYOUT
concatenate_p.piecewise_map = _concatenate_piecewise_map

_CONCAT_CONFIGS = (
    (((3,), (2,)), 0),
    (((3,),), 0),
    (((2, 3), (2, 1), (2, 0)), 1),
    (((1, 3), (0, 3), (2, 3)), 0),
    (((2, 2), (2, 2), (2, 2), (2, 2)), 0),
    (((2, 0), (2, 0)), 1),
    (((2, 1, 3), (2, 4, 3)), 1),
)


def _concat_args(rng, dt, cfg):
    shapes, dim = cfg
    return tuple(random_array(rng, s, dt) for s in shapes), dict(dimension=dim)


concatenate_p.test_spec = TestSpec(
    cases=lambda rng: _axes_cases(SHAPE_DTYPES, _CONCAT_CONFIGS, _concat_args, rng)
)


def _concatenate_transpose(ct, *operands, dimension):
    # Each linear operand gets its own stretch of `ct` along `dimension`.
    out, offset = [], 0
    ct_shape = None if is_zero(ct) else aval_of(ct).shape
    for x in operands:
        aval = aval_of(x)
        size = aval.shape[dimension]
        if not is_undefined_primal(x):
            out.append(None)
        elif ct_shape is None:
            out.append(Zero(x.aval))
        else:
            start = [0] * len(ct_shape)
            limit = list(ct_shape)
            start[dimension], limit[dimension] = offset, offset + size
            out.append(slice_p.bind(ct, start_indices=tuple(start), limit_indices=tuple(limit), strides=None))
        offset += size
    return out


deflinear(concatenate_p, _concatenate_transpose)


def _concatenate_batch(vals, dims, *, axis_data, dimension):
    # Every operand takes the batch axis where the first batched one has it; unbatched operands
    # are broadcast along it.
    bd = next(d for d in dims if d is not None)
    new = []
    for v, d in zip(vals, dims):
        if d is None:
            shape = get_aval(v).shape
            keep = tuple(k for k in range(len(shape) + 1) if k != bd)
            v = broadcast_in_dim(v, shape[:bd] + (axis_data.size,) + shape[bd:], keep)
        else:
            v = moveaxis(v, d, bd)
        new.append(v)
    return concatenate_p.bind(*new, dimension=dimension if dimension < bd else dimension + 1), bd


concatenate_p.batch = _concatenate_batch


def concatenate(operands, dimension):
    """Join `operands` (same dtype and rank, equal sizes off `dimension`) along `dimension`."""
    operands = list(operands)
    if not operands:
        raise ValueError("concatenate requires a non-empty sequence of arrays")
    if len(operands) == 1 and is_array(operands[0]):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=operator.index(dimension))
