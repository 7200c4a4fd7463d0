"""Structural primitives that move elements without computing on them: broadcast_in_dim, reshape,
transpose, squeeze and rev, plus the lax helpers built on them (broadcast,
broadcast_to_rank, expand_dims). Slicing lives in `slicing`, padding in `pad`, concatenate and split
in `concatenate`. Imports the core only.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core.ad_util import Zero, aval_of, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.index_expr import const
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.structural import broadcast_in_dim_p, reduce_sum, reshape_p, transpose_p
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import deflinear
from morphax._src.prims._shape_util import (
    SHAPE_DTYPES,
    _axes_cases,
    _inverse_permutation,
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
    "expand_dims",
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


broadcast_in_dim_p.impl = _broadcast_in_dim_impl
broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_abstract_eval
broadcast_in_dim_p.kind = Kind.LAYOUT
broadcast_in_dim_p.stablehlo = hlo.broadcast_in_dim
broadcast_in_dim_p.index_map = _broadcast_in_dim_index_map
broadcast_in_dim_p.is_identity = lambda aval, *, shape, broadcast_dimensions, sharding: (
    shape == aval.shape and broadcast_dimensions == tuple(range(aval.ndim))
)


def _broadcast_in_dim_pp_params(eqn, params):
    # Printed as JAX prints it: the shape and sharding are implied by the result's type, and
    # empty broadcast_dimensions (a scalar operand) are left out.
    params.pop("shape", None)
    params.pop("sharding", None)
    if not params.get("broadcast_dimensions"):
        params.pop("broadcast_dimensions", None)
    return params


broadcast_in_dim_p.pp_params = _broadcast_in_dim_pp_params

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
    out = reduce_sum(ct, axes) if axes else ct
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


reshape_p.impl = _reshape_impl
reshape_p.abstract_eval = _reshape_abstract_eval
reshape_p.kind = Kind.LAYOUT
reshape_p.stablehlo = hlo.reshape
reshape_p.index_map = _reshape_index_map
reshape_p.is_identity = lambda aval, *, new_sizes, dimensions, sharding: (
    dimensions is None and new_sizes == aval.shape
)

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


transpose_p.impl = lambda x, *, permutation: fresh(np.transpose(x, permutation))
transpose_p.abstract_eval = _transpose_abstract_eval
transpose_p.kind = Kind.LAYOUT
transpose_p.stablehlo = hlo.transpose
transpose_p.index_map = _transpose_index_map
transpose_p.is_identity = lambda aval, *, permutation: permutation == tuple(range(aval.ndim))

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
squeeze_p.stablehlo = lambda ctx, x, *, dimensions: [ctx.op1("stablehlo.reshape", [x], ctx.avals_out[0])]
squeeze_p.impl = lambda x, *, dimensions: fresh(np.squeeze(x, axis=dimensions))
squeeze_p.abstract_eval = _squeeze_abstract_eval
squeeze_p.kind = Kind.LAYOUT
squeeze_p.index_map = _squeeze_index_map
squeeze_p.is_identity = lambda aval, *, dimensions: dimensions == ()

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
rev_p.stablehlo = hlo.rev
rev_p.impl = lambda x, *, dimensions: fresh(np.flip(x, dimensions) if dimensions else x)
rev_p.abstract_eval = _rev_abstract_eval
rev_p.is_identity = lambda aval, *, dimensions: dimensions == ()
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
