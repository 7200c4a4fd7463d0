"""Structural primitives that move elements without computing on them: broadcast_in_dim, reshape,
transpose, squeeze, rev, pad and concatenate, plus the lax helpers built on them (broadcast,
broadcast_to_rank, expand_dims). Slicing lives in `slicing`. Imports the core only.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.index_expr import const
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._ad import (
    Zero,
    _lax,
    aval_of,
    deflinear,
    is_undefined_primal,
    is_zero,
    zeros_like_aval,
)
from morphax._src.prims._batching import moveaxis
from morphax._src.prims._helpers import same_dtypes
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._shape_util import (
    SHAPE_DTYPES,
    _axes_cases,
    _inverse_permutation,
    _scalar_zero,
    _total,
    as_lax_array,
    canonical_axis,
    canonical_shape,
    check_nonnegative_shape,
    fresh,
    is_array,
)
from morphax._src.prims._spec import TestSpec, random_array

__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "broadcast_in_dim_p",
    "broadcast_to_rank",
    "concatenate",
    "concatenate_p",
    "expand_dims",
    "pad",
    "pad_p",
    "reshape",
    "reshape_p",
    "rev",
    "rev_p",
    "squeeze",
    "squeeze_p",
    "transpose",
    "transpose_p",
]

# ---------------------------------------------------------------------------------- broadcast_in_dim


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions, sharding):
    name = "broadcast_in_dim"
    check_nonnegative_shape(name, shape)
    bd = broadcast_dimensions
    if len(bd) != x.ndim:
        raise TypeError(
            f"{name}: broadcast_dimensions must have one entry per operand dimension; got "
            f"broadcast_dimensions {bd} for operand {x.str_short()} (ndim {x.ndim})."
        )
    if len(shape) < x.ndim:
        raise TypeError(
            f"{name}: the target shape {shape} must have rank >= the operand's; got operand {x.str_short()}."
        )
    if any(not 0 <= d < len(shape) for d in bd):
        raise TypeError(
            f"{name}: broadcast_dimensions {bd} must be dimensions of the target shape {shape} "
            f"(in range [0, {len(shape)}))."
        )
    if any(a >= b for a, b in zip(bd, bd[1:])):
        raise TypeError(f"{name}: broadcast_dimensions must be strictly increasing; got {bd}.")
    for i, d in enumerate(bd):
        if x.shape[i] != 1 and x.shape[i] != shape[d]:
            raise TypeError(
                f"{name}: operand dimension sizes must be 1 or equal to the corresponding target sizes; got "
                f"operand shape {x.shape}, target shape {shape}, broadcast_dimensions {bd} (operand dimension "
                f"{i} of size {x.shape[i]} maps to target size {shape[d]})."
            )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions, sharding):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return fresh(np.broadcast_to(np.reshape(x, expanded), shape))


def _broadcast_in_dim_index_map(out_index, x, *, shape, broadcast_dimensions, sharding):
    # Operand axis i is output axis broadcast_dimensions[i]; a size-1 operand axis is always 0.
    return [tuple(const(0) if n == 1 else out_index[d] for n, d in zip(x.shape, broadcast_dimensions))]


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.impl = _broadcast_in_dim_impl
broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_abstract_eval
broadcast_in_dim_p.kind = Kind.LAYOUT
broadcast_in_dim_p.index_map = _broadcast_in_dim_index_map

_BROADCAST_CONFIGS = (
    ((), (), ()),
    ((), (3,), ()),
    ((), (2, 0), ()),
    ((3,), (2, 3), (1,)),
    ((3,), (3, 2), (0,)),
    ((1,), (4,), (0,)),
    ((1,), (0,), (0,)),
    ((2, 1), (2, 3), (0, 1)),
    ((1, 3), (2, 4, 3), (0, 2)),
    ((0,), (2, 0), (1,)),
    ((2, 3), (2, 0, 3), (0, 2)),
    ((2, 3), (2, 3), (0, 1)),
)


def _broadcast_in_dim_args(rng, dt, cfg):
    xs, shape, bd = cfg
    return (random_array(rng, xs, dt),), dict(shape=shape, broadcast_dimensions=bd, sharding=None)


broadcast_in_dim_p.test_spec = TestSpec(
    cases=lambda rng: _axes_cases(SHAPE_DTYPES, _BROADCAST_CONFIGS, _broadcast_in_dim_args, rng)
)


def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions, sharding):
    # Sum over the new dimensions and over the size-1 operand dimensions that were expanded, then
    # put the summed size-1 dimensions back.
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval)]
    bd = broadcast_dimensions
    expanded = {d for i, d in enumerate(bd) if aval.shape[i] == 1 and shape[d] != 1}
    axes = tuple(d for d in range(len(shape)) if d not in bd or d in expanded)
    out = _lax().reduce_sum(ct, axes) if axes else ct
    if aval_of(out).shape != aval.shape:
        out = reshape_p.bind(out, new_sizes=aval.shape, dimensions=None, sharding=None)
    return [out]


deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _broadcast_in_dim_batch(vals, dims, *, axis_data, shape, broadcast_dimensions, sharding):
    # The batch axis stays where it is among the operand's axes: it becomes a new output axis
    # right after the output axis of the operand axis before it (or first), so no transpose.
    (x,), (d,) = vals, dims
    bd = broadcast_dimensions
    pos = bd[d - 1] + 1 if d > 0 else 0
    new_bd = bd[:d] + (pos,) + tuple(k + 1 for k in bd[d:])
    new_shape = shape[:pos] + (axis_data.size,) + shape[pos:]
    out = broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_bd, sharding=sharding)
    return out, pos


broadcast_in_dim_p.batch = _broadcast_in_dim_batch


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """Broadcast `operand` to `shape`; operand dimension i becomes output dimension
    ``broadcast_dimensions[i]`` (size 1 or equal to the target size)."""
    shape = canonical_shape(shape, "broadcast_in_dim")
    bd = canonical_shape(broadcast_dimensions, "broadcast_in_dim", "broadcast_dimensions")
    if not shape and not bd and is_array(operand) and not get_aval(operand).shape and out_sharding is None:
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bd, sharding=out_sharding)


def broadcast(operand, sizes, *, out_sharding=None):
    """Prepend dimensions of `sizes` to `operand`'s shape."""
    sizes = canonical_shape(sizes, "broadcast", "sizes")
    if not sizes and out_sharding is None:
        return as_lax_array(operand)
    old = get_aval(operand).shape
    dims = tuple(range(len(sizes), len(sizes) + len(old)))
    return broadcast_in_dim(operand, sizes + old, dims, out_sharding=out_sharding)


def broadcast_to_rank(x, rank):
    """Prepend size-1 dimensions to `x` until it has rank `rank`."""
    ndim = len(get_aval(x).shape)
    if ndim == rank:
        return as_lax_array(x)
    return broadcast(x, (1,) * (rank - ndim))


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at `dimensions` (positions in the output; negative counts from the end)."""
    dimensions = tuple(operator.index(d) for d in dimensions)
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    shape = get_aval(array).shape
    ndim_out = len(shape) + len(dimensions)
    dims = [canonical_axis(d, ndim_out, "expand_dims") for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dims)}")
    out_shape = list(shape)
    for d in sorted(dims):
        out_shape.insert(d, 1)
    kept = tuple(i for i in range(ndim_out) if i not in dims)
    return broadcast_in_dim(array, tuple(out_shape), kept)


# ------------------------------------------------------------------------------------------- reshape


def _reshape_abstract_eval(x, *, new_sizes, dimensions, sharding):
    name = "reshape"
    if not isinstance(new_sizes, tuple) or not all(isinstance(d, (int, np.integer)) for d in new_sizes):
        raise TypeError(f"{name}: new_sizes must be a tuple of integers, got {new_sizes!r}.")
    if any(d < 0 for d in new_sizes):
        raise TypeError(
            f"{name}: new_sizes must all be non-negative, got {new_sizes} for operand {x.str_short()}. lax.reshape "
            "does not infer -1 sizes; use jnp.reshape for that."
        )
    new_size = int(np.prod(new_sizes, dtype=np.int64))
    if new_size != x.size:
        raise TypeError(
            f"{name}: total size must be unchanged, got new_sizes {new_sizes} (of total size {new_size}) for "
            f"operand shape {x.shape} (of total size {x.size})."
        )
    if dimensions is not None and tuple(sorted(dimensions)) != tuple(range(x.ndim)):
        raise TypeError(
            f"{name}: dimensions must be a permutation of the operand dimensions, got dimensions {dimensions} "
            f"for operand shape {x.shape}."
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, *, new_sizes, dimensions, sharding):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return fresh(np.reshape(x, new_sizes))


def _reshape_groups(out_shape, in_shape):
    """Pair up runs of output and input axes with equal products (size-1 axes left out): each
    run is reshaped on its own, so axes that both shapes share map one to one."""
    outs = [(d, n) for d, n in enumerate(out_shape) if n != 1]
    ins = [(d, n) for d, n in enumerate(in_shape) if n != 1]
    groups, a, b = [], 0, 0
    while a < len(outs) and b < len(ins):
        go, gi = [outs[a]], [ins[b]]
        po, pi = outs[a][1], ins[b][1]
        a, b = a + 1, b + 1
        while po != pi:  # every size here is >= 2, so both runs end together
            if po < pi:
                go.append(outs[a])
                po *= outs[a][1]
                a += 1
            else:
                gi.append(ins[b])
                pi *= ins[b][1]
                b += 1
        groups.append((go, gi))
    return groups


def _reshape_index(out_index, out_shape, in_shape):
    """Row-major reshape from `in_shape` to `out_shape`, as operand index expressions."""
    idx = [const(0)] * len(in_shape)
    if 0 in in_shape:  # no elements: the map is never evaluated
        return tuple(idx)
    for go, gi in _reshape_groups(out_shape, in_shape):
        linear = const(0)
        for d, n in go:  # the run's linear offset, row-major
            linear = linear * n + out_index[d]
        stride = int(np.prod([n for _, n in gi], dtype=np.int64))
        for k, (d, n) in enumerate(gi):
            stride //= n
            e = linear // stride if stride > 1 else linear
            idx[d] = e % n if k > 0 else e  # the first axis of a run needs no modulo
    return tuple(idx)


def _reshape_index_map(out_index, x, *, new_sizes, dimensions, sharding):
    # reshape(transpose(x, dimensions)): unflatten into the transposed shape, then un-permute.
    if dimensions is None:
        return [_reshape_index(out_index, new_sizes, x.shape)]
    t_index = _reshape_index(out_index, new_sizes, tuple(x.shape[d] for d in dimensions))
    idx = [None] * x.ndim
    for j, d in enumerate(dimensions):
        idx[d] = t_index[j]
    return [tuple(idx)]


reshape_p = Primitive("reshape")
reshape_p.impl = _reshape_impl
reshape_p.abstract_eval = _reshape_abstract_eval
reshape_p.kind = Kind.LAYOUT
reshape_p.index_map = _reshape_index_map

_RESHAPE_CONFIGS = (
    ((6,), (2, 3), None),
    ((2, 3), (3, 2), None),
    ((2, 3), (3, 2), (1, 0)),
    ((2, 3), (6,), (1, 0)),
    ((2, 3, 4), (4, 6), (2, 0, 1)),
    ((), (1, 1), None),
    ((1,), (), None),
    ((1, 1), (), (1, 0)),
    ((0, 3), (3, 0), None),
    ((2, 0), (0,), (1, 0)),
    ((2, 3), (6,), None),
)


def _reshape_args(rng, dt, cfg):
    xs, new, dims = cfg
    return (random_array(rng, xs, dt),), dict(new_sizes=new, dimensions=dims, sharding=None)


reshape_p.test_spec = TestSpec(
    cases=lambda rng: _axes_cases(SHAPE_DTYPES, _RESHAPE_CONFIGS, _reshape_args, rng)
)


def _reshape_transpose(ct, operand, *, new_sizes, dimensions, sharding):
    # reshape(transpose(x, dims)): reshape back to the transposed shape, then undo the transpose.
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval)]
    if dimensions is None:
        return [reshape_p.bind(ct, new_sizes=aval.shape, dimensions=None, sharding=None)]
    permuted = tuple(aval.shape[d] for d in dimensions)
    back = reshape_p.bind(ct, new_sizes=permuted, dimensions=None, sharding=None)
    return [transpose_p.bind(back, permutation=_inverse_permutation(dimensions))]


deflinear(reshape_p, _reshape_transpose)


def _reshape_batch(vals, dims, *, axis_data, new_sizes, dimensions, sharding):
    # The batch axis goes first through reshape's own `dimensions` (one primitive, not a transpose
    # and a reshape), and the result gains a leading axis of the batch size.
    (x,), (d,) = vals, dims
    n = len(get_aval(x).shape) - 1
    order = tuple(range(n)) if dimensions is None else dimensions
    perm = (d,) + tuple(k if k < d else k + 1 for k in order)
    perm = None if perm == tuple(range(n + 1)) else perm
    out = reshape_p.bind(x, new_sizes=(axis_data.size,) + new_sizes, dimensions=perm, sharding=sharding)
    return out, 0


reshape_p.batch = _reshape_batch


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """Reshape (in row-major order) to `new_sizes`, after transposing by `dimensions` if given.

    Sizes must be explicit (no -1); the total size must be unchanged.
    """
    new_sizes = canonical_shape(new_sizes, "reshape", "new_sizes")
    shape = get_aval(operand).shape
    if dimensions is None:
        dims, same_dims = None, True
    else:
        dims = canonical_shape(dimensions, "reshape", "dimensions")
        same_dims = dims == tuple(range(len(shape)))
    if shape and shape == new_sizes and same_dims and is_array(operand) and out_sharding is None:
        return operand
    return reshape_p.bind(
        operand, new_sizes=new_sizes, dimensions=None if same_dims else dims, sharding=out_sharding
    )


# ----------------------------------------------------------------------------------------- transpose


def _transpose_abstract_eval(x, *, permutation):
    if not isinstance(permutation, tuple) or tuple(sorted(permutation)) != tuple(range(x.ndim)):
        raise TypeError(
            f"transpose: permutation must be a permutation of the operand dimensions, got permutation "
            f"{permutation} for operand shape {x.shape}."
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_index_map(out_index, x, *, permutation):
    # Output axis i is operand axis permutation[i].
    idx = [None] * x.ndim
    for i, p in enumerate(permutation):
        idx[p] = out_index[i]
    return [tuple(idx)]


transpose_p = Primitive("transpose")
transpose_p.impl = lambda x, *, permutation: fresh(np.transpose(x, permutation))
transpose_p.abstract_eval = _transpose_abstract_eval
transpose_p.kind = Kind.LAYOUT
transpose_p.index_map = _transpose_index_map

_TRANSPOSE_CONFIGS = (
    ((), ()),
    ((3,), (0,)),
    ((2, 3), (1, 0)),
    ((2, 3), (0, 1)),
    ((2, 3, 4), (2, 0, 1)),
    ((0, 2), (1, 0)),
    ((1, 4, 1), (2, 1, 0)),
)


def _transpose_args(rng, dt, cfg):
    return (random_array(rng, cfg[0], dt),), dict(permutation=cfg[1])


transpose_p.test_spec = TestSpec(
    cases=lambda rng: _axes_cases(SHAPE_DTYPES, _TRANSPOSE_CONFIGS, _transpose_args, rng)
)


def _transpose_transpose(ct, operand, *, permutation):
    if is_zero(ct):
        return [Zero(operand.aval)]
    return [transpose_p.bind(ct, permutation=_inverse_permutation(permutation))]


deflinear(transpose_p, _transpose_transpose)


def _transpose_batch(vals, dims, *, axis_data, permutation):
    # The batch axis keeps its position; the other axes are permuted around it.
    (x,), (d,) = vals, dims
    perm = [k if k < d else k + 1 for k in permutation]
    perm.insert(d, d)
    return transpose_p.bind(x, permutation=tuple(perm)), d


transpose_p.batch = _transpose_batch


def transpose(operand, permutation):
    """Permute dimensions: output dimension i is operand dimension ``permutation[i]``."""
    permutation = canonical_shape(permutation, "transpose", "permutation")
    if permutation == tuple(range(len(get_aval(operand).shape))) and is_array(operand):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


# ------------------------------------------------------------------------------------------- squeeze


def _squeeze_abstract_eval(x, *, dimensions):
    if not isinstance(dimensions, tuple):
        raise TypeError(f"squeeze: dimensions must be a tuple of integers, got {dimensions!r}.")
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"squeeze: dimensions are not unique: {dimensions} (operand shape {x.shape}).")
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise ValueError(
            f"squeeze: dimensions {dimensions} are outside the range [0, {x.ndim}) of operand "
            f"shape {x.shape}."
        )
    if any(x.shape[d] != 1 for d in dimensions):
        raise ValueError(
            f"squeeze: cannot squeeze out an axis whose size is not 1; got operand shape {x.shape} and "
            f"dimensions {dimensions}."
        )
    shape = tuple(n for i, n in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _squeeze_index_map(out_index, x, *, dimensions):
    # The squeezed (size-1) axes are 0; the others are the output axes in order.
    it = iter(out_index)
    return [tuple(const(0) if d in dimensions else next(it) for d in range(x.ndim))]


squeeze_p = Primitive("squeeze")
squeeze_p.impl = lambda x, *, dimensions: fresh(np.squeeze(x, axis=dimensions))
squeeze_p.abstract_eval = _squeeze_abstract_eval
squeeze_p.kind = Kind.LAYOUT
squeeze_p.index_map = _squeeze_index_map

_SQUEEZE_CONFIGS = (
    ((1, 3), (0,)),
    ((3, 1), (1,)),
    ((1, 1), (0, 1)),
    ((1,), (0,)),
    ((2, 1, 0), (1,)),
    ((2, 3), ()),
    ((), ()),
    ((1, 2, 1), (0, 2)),
)


def _squeeze_args(rng, dt, cfg):
    return (random_array(rng, cfg[0], dt),), dict(dimensions=cfg[1])


squeeze_p.test_spec = TestSpec(
    cases=lambda rng: _axes_cases(SHAPE_DTYPES, _SQUEEZE_CONFIGS, _squeeze_args, rng)
)


def _squeeze_transpose(ct, operand, *, dimensions):
    if is_zero(ct):
        return [Zero(operand.aval)]
    return [reshape_p.bind(ct, new_sizes=operand.aval.shape, dimensions=None, sharding=None)]


deflinear(squeeze_p, _squeeze_transpose)


def _squeeze_batch(vals, dims, *, axis_data, dimensions):
    (x,), (d,) = vals, dims
    out = squeeze_p.bind(x, dimensions=tuple(k if k < d else k + 1 for k in dimensions))
    return out, d - sum(k < d for k in dimensions)


squeeze_p.batch = _squeeze_batch


def squeeze(array, dimensions):
    """Remove the size-1 dimensions listed in `dimensions` (negative counts from the end)."""
    ndim = len(get_aval(array).shape)
    dims = tuple(sorted(canonical_axis(d, ndim, "squeeze") for d in dimensions))
    if not dims and is_array(array):
        return array
    return squeeze_p.bind(array, dimensions=dims)


# ----------------------------------------------------------------------------------------------- rev


def _rev_abstract_eval(x, *, dimensions):
    if not isinstance(dimensions, tuple):
        raise TypeError(f"rev: dimensions must be a tuple of integers, got {dimensions!r}.")
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev: dimensions must be unique, got {dimensions}.")
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise TypeError(
            f"rev: dimensions must be in range [0, {x.ndim}) for operand shape {x.shape}, got {dimensions}."
        )
    return x


def _rev_index_map(out_index, x, *, dimensions):
    return [tuple((n - 1) - i if d in dimensions else i for d, (i, n) in enumerate(zip(out_index, x.shape)))]


rev_p = Primitive("rev")
rev_p.impl = lambda x, *, dimensions: fresh(np.flip(x, dimensions) if dimensions else x)
rev_p.abstract_eval = _rev_abstract_eval
rev_p.kind = Kind.LAYOUT
rev_p.index_map = _rev_index_map

_REV_CONFIGS = (
    ((3,), (0,)),
    ((2, 3), (0, 1)),
    ((2, 3), (1,)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (0,)),
    ((1, 4), (1,)),
    ((2, 3, 4), (2, 0)),
)


def _rev_args(rng, dt, cfg):
    return (random_array(rng, cfg[0], dt),), dict(dimensions=cfg[1])


rev_p.test_spec = TestSpec(cases=lambda rng: _axes_cases(SHAPE_DTYPES, _REV_CONFIGS, _rev_args, rng))


def _rev_transpose(ct, operand, *, dimensions):
    if is_zero(ct):
        return [Zero(operand.aval)]
    return [rev_p.bind(ct, dimensions=dimensions)]


deflinear(rev_p, _rev_transpose)


def _rev_batch(vals, dims, *, axis_data, dimensions):
    (x,), (d,) = vals, dims
    return rev_p.bind(x, dimensions=tuple(k if k < d else k + 1 for k in dimensions)), d


rev_p.batch = _rev_batch


def rev(operand, dimensions):
    """Reverse the order of elements along each of `dimensions`."""
    return rev_p.bind(operand, dimensions=canonical_shape(dimensions, "rev", "dimensions"))


# ----------------------------------------------------------------------------------------------- pad


def _dilated(size: int, interior: int) -> int:
    return 0 if size == 0 else size + (size - 1) * interior


def _pad_abstract_eval(x, padding_value, *, padding_config):
    name = "pad"
    if padding_value.shape:
        raise TypeError(f"{name}: padding_value must be a scalar, got {padding_value.str_short()}.")
    if x.dtype != padding_value.dtype:
        raise TypeError(
            f"{name}: operand and padding_value must have the same dtype, got {x.dtype.name} and "
            f"{padding_value.dtype.name}. Cast padding_value with lax.convert_element_type."
        )
    if len(padding_config) != x.ndim or any(len(c) != 3 for c in padding_config):
        raise ValueError(
            f"{name}: padding_config must hold one (low, high, interior) triple per operand axis, got "
            f"padding_config {padding_config} for operand shape {x.shape}."
        )
    if any(i < 0 for _, _, i in padding_config):
        raise ValueError(
            f"{name}: interior padding must be non-negative, got padding_config {padding_config}."
        )
    shape = tuple(lo + hi + _dilated(n, i) for (lo, hi, i), n in zip(padding_config, x.shape))
    if any(d < 0 for d in shape):
        raise ValueError(
            f"{name}: dimension sizes after padding must be at least 0, got result shape {shape} for "
            f"padding_config {padding_config} and operand shape {x.shape}."
        )
    return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


def _pad_impl(x, padding_value, *, padding_config):
    # Interior padding and the non-negative edges first, then negative edges crop from the result.
    grown = [max(lo, 0) + max(hi, 0) + _dilated(n, i) for (lo, hi, i), n in zip(padding_config, x.shape)]
    out = np.full(grown, padding_value, dtype=x.dtype)
    place = tuple(
        slice(max(lo, 0), max(lo, 0) + _dilated(n, i), i + 1)
        for (lo, hi, i), n in zip(padding_config, x.shape)
    )
    out[place] = x
    crop = tuple(slice(max(-lo, 0), g - max(-hi, 0)) for (lo, hi, _), g in zip(padding_config, grown))
    return fresh(out[crop])


def _pad_piecewise_map(out_index, operand, padding_value, *, padding_config):
    """Output element i (per axis, low padding lo, interior padding `interior`) is operand element
    (i - lo) / (interior + 1) where that is a whole number in range, else the padding value."""
    guard, index = [], []
    for i, (lo, _, interior), n in zip(out_index, padding_config, operand.shape):
        step = interior + 1
        guard.append((i - lo, 0, (n - 1) * step + 1, step))
        # Shifted so the dividend is never negative (C truncates where Python floors).
        shift = -(-lo // step) if lo > 0 else 0
        index.append((i - lo + step * shift) // step - shift if step > 1 else i - lo)
    return [(0, tuple(guard), tuple(index))], (1, ())


pad_p = Primitive("pad")
pad_p.impl = _pad_impl
pad_p.abstract_eval = _pad_abstract_eval
# Data movement: an output element is an operand element or the padding value.
pad_p.kind = Kind.LAYOUT
pad_p.piecewise_map = _pad_piecewise_map

_PAD_CONFIGS = (
    ((), ()),
    ((3,), ((1, 2, 0),)),
    ((3,), ((0, 0, 0),)),
    ((3,), ((-1, 0, 1),)),
    ((4,), ((-2, -1, 0),)),
    ((3,), ((-5, 0, 1),)),
    ((2,), ((-3, 1, 2),)),
    ((0,), ((2, 1, 3),)),
    ((1,), ((0, 0, 4),)),
    ((2, 3), ((1, -1, 2), (0, 2, 1))),
    ((1, 4), ((0, 0, 5), (-3, 2, 0))),
    ((2, 0, 3), ((1, 1, 1), (1, 0, 2), (-1, -1, 0))),
)


def _pad_args(rng, dt, cfg):
    xs, config = cfg
    return (random_array(rng, xs, dt), random_array(rng, (), dt)), dict(padding_config=config)


pad_p.test_spec = TestSpec(cases=lambda rng: _axes_cases(SHAPE_DTYPES, _PAD_CONFIGS, _pad_args, rng))


def _pad_transpose(ct, operand, padding_value, *, padding_config):
    # Linear in both: the operand's cotangent is the strided interior of `ct` (cropped edges, from
    # negative low/high, are first padded back with zeros); the padding value's is everything else.
    undef_x, undef_v = is_undefined_primal(operand), is_undefined_primal(padding_value)
    if is_zero(ct):
        return [
            Zero(operand.aval) if undef_x else None,
            Zero(padding_value.aval) if undef_v else None,
        ]
    x_shape = aval_of(operand).shape
    uncropped = ct
    if any(lo or hi for lo, hi, _ in padding_config):
        undo = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
        uncropped = pad_p.bind(ct, _scalar_zero(ct), padding_config=undo)
    t_x = uncropped
    if any(i for _, _, i in padding_config):
        t_x = _lax().slice_p.bind(
            uncropped,
            start_indices=(0,) * len(x_shape),
            limit_indices=aval_of(uncropped).shape,
            strides=tuple(i + 1 for _, _, i in padding_config),
        )
    t_v = _lax().sub(_total(ct), _total(t_x)) if undef_v else None
    return [t_x if undef_x else None, t_v]


deflinear(pad_p, _pad_transpose)


def _pad_batch(vals, dims, *, axis_data, padding_config):
    # A batched operand is padded with nothing along its batch axis. A batched padding value (one
    # per batch element) cannot be a pad parameter: pad with zeros, then select the padding value
    # wherever a padded all-True mask says the element did not come from the operand.
    (x, v), (dx, dv) = vals, dims
    if dv is None:
        config = padding_config[:dx] + ((0, 0, 0),) + padding_config[dx:]
        return pad_p.bind(x, v, padding_config=config), dx
    L = _lax()
    size = axis_data.size
    x_aval = get_aval(x)
    x_shape = x_aval.shape
    zero = zeros_like_aval(ShapedArray((), x_aval.dtype, x_aval.weak_type))
    if dx is not None:
        x_shape = x_shape[:dx] + x_shape[dx + 1 :]
        config = padding_config[:dx] + ((0, 0, 0),) + padding_config[dx:]
        padded = pad_p.bind(x, zero, padding_config=config)
    else:
        padded = pad_p.bind(x, zero, padding_config=padding_config)
        padded = broadcast_in_dim(padded, (size,) + get_aval(padded).shape, tuple(range(1, len(x_shape) + 1)))
    d = 0 if dx is None else dx
    out_shape = get_aval(padded).shape
    others = tuple(k for k in range(len(out_shape)) if k != d)
    mask = pad_p.bind(L.full(x_shape, True, bool), L.full((), False, bool), padding_config=padding_config)
    mask = broadcast_in_dim(mask, out_shape, others)
    fill = broadcast_in_dim(v, out_shape, (d,))
    return L.select_n(mask, fill, padded), d


pad_p.batch = _pad_batch


def pad(operand, padding_value, padding_config):
    """Pad each axis with (low, high, interior) copies of the scalar `padding_value`.

    Negative low/high remove elements from that edge; interior inserts values between elements.
    """
    try:
        config = tuple(
            (operator.index(lo), operator.index(hi), operator.index(i)) for lo, hi, i in padding_config
        )
    except (TypeError, ValueError):
        raise TypeError(
            f"pad: padding_config must be a sequence of (low, high, interior) integer triples, got {padding_config!r}."
        ) from None
    if _dtypes.is_python_scalar(padding_value) and not _dtypes.is_python_scalar(operand):
        # As JAX: a Python scalar padding value has its own (default) dtype, which must be the
        # operand's; it is not cast, so lax.pad(f32_array, 0, ...) is an error, as is (int8, 0).
        op_dt, pv_dt = get_aval(operand).dtype, _dtypes.python_scalar_dtype(padding_value)
        if op_dt != pv_dt:
            raise TypeError(
                f"pad: operand and padding_value must have the same dtype, got {op_dt.name} and "
                f"{pv_dt.name} (the Python {type(padding_value).__name__} {padding_value!r}). Pass a "
                f"padding_value of the operand's dtype, e.g. np.array({padding_value!r}, {op_dt.name!r})."
            )
    operand, padding_value = lax_binary_operands("pad", operand, padding_value)
    return pad_p.bind(operand, padding_value, padding_config=config)


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
            out.append(
                _lax().slice_p.bind(ct, start_indices=tuple(start), limit_indices=tuple(limit), strides=None)
            )
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
