"""`jax.lax` functions JAX composes from other operations, with no primitive of their own: stack,
unstack, tile, collapse, approx_max_k/approx_min_k (through top_k), scatter_sub, index_take,
batch_matmul, broadcast_shapes/broadcast_like, empty, dtype and shape_as_value.
Imports the core and the primitive families only.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.prims._shape_util import as_lax_array, canonical_axis, canonical_shape
from morphax._src.prims.arithmetic import add, rem
from morphax._src.prims.concatenate import concatenate, split
from morphax._src.prims.conversion import full
from morphax._src.prims.dot import dot_general
from morphax._src.prims.gather_scatter_add import gather, scatter_add
from morphax._src.prims.gather_scatter_dims import GatherDimensionNumbers
from morphax._src.prims.shape import broadcast_in_dim, expand_dims, reshape, squeeze
from morphax._src.prims.sorting import top_k
from morphax._src.prims.unary import neg

__all__ = [
    "approx_max_k",
    "approx_min_k",
    "batch_matmul",
    "broadcast_like",
    "broadcast_shapes",
    "collapse",
    "dtype",
    "empty",
    "index_take",
    "scatter_sub",
    "shape_as_value",
    "stack",
    "tile",
    "unstack",
]


def _approx_output_size(n, rank, k, recall_target, aggregate_to_topk, override):
    """XLA's ApproxTopKReductionOutputSize: how many candidates the approximate search keeps."""
    if aggregate_to_topk:
        return k
    tiling = 1024 if rank == 1 else 128
    if n <= tiling:
        return n
    if override >= 0 and n > override:
        raise ValueError(
            f"reduction_input_size_override: {override} should be greater equals to operands[reduction_dim]: {n}"
        )
    logical = override if override >= 0 else n
    if k == 1:
        return tiling
    if recall_target == 1.0:
        return n
    if not 0.0 < recall_target <= 1.0:
        raise ValueError("recall_target should range in (0,1]")
    m = min(max(int((1.0 - k) / math.log(recall_target)), tiling), n)
    ratio = logical // m
    log2_reduction = ratio.bit_length() - 1 if ratio else 0  # floor(log2), 0 for 0
    if log2_reduction == 0:
        return n
    whole = n // tiling
    log2_reduction = min(log2_reduction, (whole - 1).bit_length() if whole else 0)  # ceil(log2)
    chunks = -(-n // tiling)
    return -(-chunks // (1 << log2_reduction)) * tiling


def _approx_top_k(name, operand, k, reduction_dimension, recall_target, override, aggregate_to_topk, is_max):
    operand = as_lax_array(operand)
    aval = get_aval(operand)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if not aval.shape:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {aval.shape}")
    axis = canonical_axis(reduction_dimension, aval.ndim, name)
    if aval.shape[axis] < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {aval.shape[axis]}, got {k}")
    if not _dtypes.is_floating(aval.dtype):
        raise ValueError("operand must be a floating type")
    size = _approx_output_size(aval.shape[axis], aval.ndim, k, recall_target, aggregate_to_topk, override)
    # XLA's CPU fallback sorts exactly and keeps `size` entries; top_k does that. The smallest
    # entries are the largest of the negation (exact), which also puts NaN last, as sort does.
    if is_max:
        return top_k(operand, size, axis=axis)
    values, indices = top_k(neg(operand), size, axis=axis)
    return [neg(values), indices]


def approx_max_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The `k` largest values along `reduction_dimension` (descending) and their int32 indices. On
    CPU the search is exact; with ``aggregate_to_topk=False`` XLA's candidate count is returned."""
    return _approx_top_k(
        "approx_max_k",
        operand,
        k,
        reduction_dimension,
        recall_target,
        reduction_input_size_override,
        aggregate_to_topk,
        True,
    )


def approx_min_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The `k` smallest values along `reduction_dimension` (ascending) and their int32 indices."""
    return _approx_top_k(
        "approx_min_k",
        operand,
        k,
        reduction_dimension,
        recall_target,
        reduction_input_size_override,
        aggregate_to_topk,
        False,
    )


def scatter_sub(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """Subtract `updates` from `operand` at the selected windows; duplicates accumulate. Computed as
    scatter-add of the negated updates: IEEE subtraction is addition of the negation, and integers
    wrap the same way, so values and derivatives equal a dedicated scatter-sub."""
    operand = as_lax_array(operand)
    dt = get_aval(operand).dtype
    if _dtypes.is_bool(dt):
        raise TypeError("scatter_sub does not accept dtype bool: subtraction needs a number type.")
    updates = (
        make_array(updates, dt, weak_type=True)
        if _dtypes.is_python_scalar(updates)
        else as_lax_array(updates)
    )
    if get_aval(updates).dtype != dt:
        raise TypeError(
            f"scatter_sub: operand and updates must have the same dtype, got {dt.name} and "
            f"{get_aval(updates).dtype.name}. Cast the updates with lax.convert_element_type."
        )
    return scatter_add(
        operand,
        scatter_indices,
        neg(updates),
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )


def index_take(src, idxs, axes):
    """``src`` indexed by the 1-d integer arrays `idxs` along `axes` (one per axis, taken together;
    negative indices wrap), the remaining axes kept: JAX's gather-based helper."""
    src = as_lax_array(src)
    shape = get_aval(src).shape
    axes = tuple(operator.index(a) for a in axes)
    idxs = [as_lax_array(i) for i in idxs]
    indices = concatenate([expand_dims(i, (1,)) for i in idxs], 1)
    dt = get_aval(indices).dtype
    bound = make_array(np.array([shape[a] for a in axes]).astype(dt), dt)
    bound = broadcast_in_dim(bound, get_aval(indices).shape, (1,))
    indices = rem(add(rem(indices, bound), bound), bound)  # a floor modulus
    slice_sizes = tuple(1 if i in axes else d for i, d in enumerate(shape))
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
        collapsed_slice_dims=axes,
        start_index_map=axes,
    )
    return gather(src, indices, dnums, slice_sizes)


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge axes ``[start_dimension, stop_dimension)`` into one (row-major)."""
    operand = as_lax_array(operand)
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(
            f"Invalid dimension range passed to collapse: {shape}[{start_dimension}:{stop_dimension}]"
        )
    return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def stack(operands, axis=0):
    """Join equally shaped arrays along a new axis."""
    arrays = [as_lax_array(x) for x in operands]
    if not arrays:
        raise ValueError("lax.stack requires at least one operand.")
    avals = [get_aval(a) for a in arrays]
    if len({a.shape for a in avals}) > 1:
        raise ValueError(
            f"All input arrays must have the same shape. Got {', '.join(str(a.shape) for a in avals)}."
        )
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(
            f"lax.stack requires arguments to have the same dtypes, got {', '.join(a.dtype.name for a in avals)}."
        )
    axis = canonical_axis(axis, avals[0].ndim + 1, "stack")
    return concatenate([expand_dims(a, (axis,)) for a in arrays], axis)


def unstack(x, axis=0):
    """The slices of `x` along `axis`, as a tuple of arrays with that axis removed."""
    x = as_lax_array(x)
    shape = get_aval(x).shape
    if not shape:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    axis = canonical_axis(axis, len(shape), "unstack")
    if shape[axis] == 0:
        return ()
    return tuple(squeeze(p, (axis,)) for p in split(x, (1,) * shape[axis], axis))


def tile(operand, reps):
    """Repeat `operand` ``reps[i]`` times along each axis i."""
    operand = as_lax_array(operand)
    shape = get_aval(operand).shape
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != len(shape):
        raise TypeError(
            f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and x.ndim={len(shape)}."
        )
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}.")
    if not shape:
        return operand
    spread = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    y = broadcast_in_dim(operand, spread, tuple(range(1, 2 * len(shape), 2)))
    return reshape(y, tuple(r * d for r, d in zip(reps, shape)))


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` whose values are unspecified (zeros here, as XLA CPU gives)."""
    return full(canonical_shape(shape, "empty"), 0, dtype, sharding=out_sharding)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over matching leading (batch) axes: (..., m, k) @ (..., k, n)."""
    ln, rn = len(get_aval(lhs).shape), len(get_aval(rhs).shape)
    if min(ln, rn) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ln}, {rn}")
    if ln != rn:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ln}, {rn}")
    batch = tuple(range(ln - 2))
    return dot_general(lhs, rhs, (((ln - 1,), (rn - 2,)), (batch, batch)), precision=precision)


def broadcast_shapes(*shapes):
    """The shape NumPy broadcasting gives `shapes` (ValueError when they are incompatible)."""
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + s for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_like(arr, like_arr):
    """`arr` broadcast (NumPy rules) to the shape of `like_arr`."""
    arr = as_lax_array(arr)
    aval, target = get_aval(arr), get_aval(like_arr).shape
    lead = len(target) - aval.ndim
    if lead < 0 or any(d not in (1, t) for d, t in zip(aval.shape, target[lead:])):
        raise ValueError(
            f"Incompatible types for broadcasting: input type={aval.str_short()} and requested type="
            f"{aval.update(shape=target).str_short()}"
        )
    if aval.shape == target:
        return arr
    return broadcast_in_dim(arr, target, tuple(range(lead, len(target))))


def dtype(x):
    """The (canonical) dtype of an array, scalar, or dtype-like `x`."""
    return _dtypes.dtype(x, canonicalize=True)


def shape_as_value(shape):
    """`shape` as an integer vector (int32 unless a size needs 64 bits)."""
    big = any(d > np.iinfo(np.int32).max for d in shape)
    dt = np.dtype(np.int64 if big else np.int32)
    if not shape:
        return full((0,), 0, dt)
    return np.asarray(shape, dtype=dt)
