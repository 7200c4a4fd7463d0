"""Slices at traced start indices: `dynamic_slice` and `dynamic_update_slice` (each other's
transpose), with their lax helpers (dynamic_slice_in_dim, dynamic_index_in_dim, dynamic_update_*).

Dynamic starts follow XLA: each is clamped so the whole window stays in bounds. The lax wrappers,
like JAX's, first wrap negative starts once (``i + dim``); the primitives never do. Batched starts
turn into a gather (dynamic_slice) or a scatter (dynamic_update_slice).
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
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
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import linear_in_first
from morphax._src.prims._shape_util import SHAPE_DTYPES, canonical_axis, canonical_shape, fresh
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.concatenate import concatenate_p
from morphax._src.prims.conversion import convert_element_type_p
from morphax._src.prims.gather_scatter_add import gather_p
from morphax._src.prims.gather_scatter_dims import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
)
from morphax._src.prims.scatter import scatter_p
from morphax._src.prims.shape import broadcast_in_dim, expand_dims, squeeze
from morphax._src.prims.slicing import index_in_dim

__all__ = [
    "dynamic_slice_p",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_index_in_dim",
    "dynamic_update_slice_p",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "dynamic_update_index_in_dim",
]


def _check_indices(name, x, indices):
    if len(indices) != x.ndim:
        raise TypeError(
            f"{name}: needs one start index per operand dimension, got {len(indices)} indices for operand "
            f"shape {x.shape}."
        )
    if any(i.shape for i in indices):
        raise TypeError(
            f"{name}: start indices must be scalars, got {', '.join(i.str_short() for i in indices)}."
        )
    if any(not _dtypes.is_integer(i.dtype) or i.dtype != indices[0].dtype for i in indices):
        raise TypeError(
            f"{name}: start indices must be integers of one dtype, got "
            f"{', '.join(i.dtype.name for i in indices)}. Cast them with lax.convert_element_type."
        )


def _clamped_starts(indices, shape, window):
    """XLA's rule: each start is clamped into [0, dim - window] so the window stays in bounds."""
    return [min(max(int(i), 0), n - w) for i, n, w in zip(indices, shape, window)]


def _fits(value: int, dt) -> bool:
    info = np.iinfo(dt)
    return int(info.min) <= value <= int(info.max)


def _normalize_indices(name, operand, start_indices, allow_negative_indices):
    """The wrappers' index handling: one scalar per dimension, negative values wrapped once (like
    JAX's lax), Python ints made into constants of the indices' dtype."""
    shape = get_aval(operand).shape
    if isinstance(start_indices, (list, tuple)):
        indices = list(start_indices)
    else:
        aval = get_aval(start_indices)
        if aval.ndim != 1:
            raise ValueError(f"{name}: slice indices must be a 1D sequence, got shape {aval.shape}.")
        if isinstance(start_indices, Tracer):
            indices = [index_in_dim(start_indices, k, 0, keepdims=False) for k in range(aval.shape[0])]
        else:
            indices = list(np.asarray(start_indices))
    if len(indices) != len(shape):
        raise ValueError(
            f"{name}: length of slice indices must match the number of operand dimensions ({len(indices)} vs "
            f"{len(shape)}, operand shape {shape})."
        )
    allow = allow_negative_indices
    allow = [bool(allow)] * len(shape) if isinstance(allow, bool) else [bool(a) for a in allow]
    typed = [get_aval(i).dtype for i in indices if type(i) is not int]
    default = typed[0] if typed else _dtypes.default_int_dtype()
    out = []
    for i, n, wrap in zip(indices, shape, allow):
        if isinstance(i, Tracer):
            if not _dtypes.is_integer(i.dtype) or i.shape:
                raise TypeError(f"{name}: start indices must be integer scalars, got {i.aval.str_short()}.")
            out.append(_wrap_traced(i, n) if wrap and not _dtypes.is_unsigned(i.dtype) else i)
            continue
        dt = default if type(i) is int else get_aval(i).dtype
        if not (_dtypes.is_integer(dt) and not get_aval(i).shape):
            raise TypeError(f"{name}: start indices must be integer scalars, got {i!r}.")
        value = int(i)
        if value < 0 and wrap:
            value += n
        if not _fits(value, dt):
            # Clamping into [0, n] first is harmless: the primitive clamps into [0, n - size] anyway.
            value = min(max(value, 0), n)
            if not _fits(value, dt):
                dt = _dtypes.default_int_dtype()
        out.append(make_array(value, dt))
    return out


def _wrap_traced(i, n):
    """``select(i < 0, i + n, i)`` staged with lax ops, as JAX's wrapper does for traced starts."""
    from morphax._src.prims.arithmetic import add
    from morphax._src.prims.compare import lt
    from morphax._src.prims.selection import select_n

    dt = i.dtype
    size = make_array(np.array(n).astype(dt), dt)  # wraps like convert_element_type when n overflows dt
    return select_n(lt(i, make_array(0, dt)), i, add(i, size))


def _dynamic_slice_abstract_eval(x, *indices, slice_sizes):
    name = "dynamic_slice"
    _check_indices(name, x, indices)
    if not isinstance(slice_sizes, tuple) or len(slice_sizes) != x.ndim:
        raise TypeError(
            f"{name}: slice_sizes must have one entry per operand dimension, got slice_sizes {slice_sizes} for "
            f"operand shape {x.shape}."
        )
    if any(not 0 <= s <= n for s, n in zip(slice_sizes, x.shape)):
        raise TypeError(
            f"{name}: slice_sizes must be between 0 and the operand shape, got slice_sizes {slice_sizes} for "
            f"operand shape {x.shape}."
        )
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice_impl(x, *indices, slice_sizes):
    starts = _clamped_starts(indices, x.shape, slice_sizes)
    return fresh(x[tuple(slice(s, s + w) for s, w in zip(starts, slice_sizes))])


def _dynamic_slice_index_map(x, *indices, slice_sizes):
    """Output element i is operand element start + i, each start clamped into [0, dim - size]."""
    starts = [(1 + d, 0, n - w) for d, (n, w) in enumerate(zip(x.shape, slice_sizes))]
    return 0, starts, lambda out_index, offsets: tuple(i + s for i, s in zip(out_index, offsets))


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.stablehlo = hlo.dynamic_slice
dynamic_slice_p.impl = _dynamic_slice_impl
dynamic_slice_p.abstract_eval = _dynamic_slice_abstract_eval


# A window of the operand at an offset read from the scalar start operands (clamped in bounds).
dynamic_slice_p.kind = Kind.LAYOUT
dynamic_slice_p.dynamic_index_map = _dynamic_slice_index_map
_DYNAMIC_SLICE_CONFIGS = (
    ((), (), ()),
    ((5,), (1,), (3,)),
    ((5,), (4,), (3,)),
    ((5,), (-2,), (2,)),
    ((5,), (100,), (0,)),
    ((4,), (2,), (4,)),
    ((1,), (0,), (1,)),
    ((3, 4), (1, 3), (2, 2)),
    ((3, 4), (-1, -7), (1, 4)),
    ((0, 3), (0, 1), (0, 2)),
    ((2, 3, 4), (1, 5, -3), (2, 1, 2)),
)


_INDEX_DTYPES = ("int32", "uint8", "int8", "uint32", "int16")


def _index_arrays(starts, dt):
    info = np.iinfo(dt)
    return tuple(np.array(min(max(s, int(info.min)), int(info.max))).astype(dt) for s in starts)


def _dynamic_slice_cases(rng):
    out = []
    for k, dt in enumerate(SHAPE_DTYPES):
        for shape, starts, sizes in _DYNAMIC_SLICE_CONFIGS:
            idt = _INDEX_DTYPES[k]
            args = (random_array(rng, shape, dt), *_index_arrays(starts, idt))
            out.append(Case(args, dict(slice_sizes=sizes), f"{dt}{list(shape)}@{starts}:{idt}{sizes}"))
    x = random_array(rng, (200,), "float32")
    for idt in _INDEX_DTYPES:
        info = np.iinfo(idt)
        for s in (int(info.min), int(info.max)):
            out.append(Case((x, np.array(s).astype(idt)), dict(slice_sizes=(3,)), f"float32[200]@{s}:{idt}"))
    return out


dynamic_slice_p.test_spec = TestSpec(cases=_dynamic_slice_cases)


def _dynamic_slice_transpose(ct, operand, *indices, slice_sizes):
    # Write `ct` into zeros at the same starts: dynamic_update_slice clamps them with the same
    # window (slice_sizes), so the cotangent lands exactly where the slice was read.
    aval = operand.aval
    rest = [None] * len(indices)
    if is_zero(ct):
        return [Zero(aval), *rest]
    return [dynamic_update_slice_p.bind(zeros_like_aval(tangent_aval(aval)), ct, *indices), *rest]


linear_in_first(dynamic_slice_p, _dynamic_slice_transpose)


def _batched_starts(indices, dims, size):
    """The start indices as one (size, n) array: row b holds batch element b's start vector."""
    cols = [broadcast_in_dim(i, (size, 1), () if d is None else (0,)) for i, d in zip(indices, dims)]
    return cols[0] if len(cols) == 1 else concatenate_p.bind(*cols, dimension=1)


def _zero_start(indices):
    """A 0 start of the indices' dtype (the default int for a rank-0 operand, which has none)."""
    return make_array(0, get_aval(indices[0]).dtype if indices else _dtypes.default_int_dtype())


def _insert_axis(seq, d, value):
    return tuple(seq[:d]) + (value,) + tuple(seq[d:])


def _dynamic_slice_batch(vals, dims, *, axis_data, slice_sizes):
    # Unbatched starts: one more start (0) and a full-size window along the batch axis. Batched
    # starts: a gather whose every index vector is one batch element's start vector, in CLIP mode
    # (which clamps each start into [0, dim - size], exactly dynamic_slice's rule). A batched
    # operand pairs its batch axis with the indices' batch axis (operand_batching_dims); the
    # output keeps the operand's batch axis in place.
    x, indices = vals[0], vals[1:]
    dx, idims = dims[0], dims[1:]
    size = axis_data.size
    if all(d is None for d in idims):
        zero = _zero_start(indices)
        out = dynamic_slice_p.bind(
            x, *_insert_axis(indices, dx, zero), slice_sizes=_insert_axis(slice_sizes, dx, size)
        )
        return out, dx
    starts = _batched_starts(indices, idims, size)
    n = len(slice_sizes)
    if dx is None:
        dn = GatherDimensionNumbers(
            offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(), start_index_map=tuple(range(n))
        )
        sizes, out_dim = slice_sizes, 0
    else:
        dn = GatherDimensionNumbers(
            offset_dims=tuple(k for k in range(n + 1) if k != dx),
            collapsed_slice_dims=(),
            start_index_map=tuple(k for k in range(n + 1) if k != dx),
            operand_batching_dims=(dx,),
            start_indices_batching_dims=(0,),
        )
        # The batching axis takes one element per batch entry: none when the batch is empty (JAX).
        sizes, out_dim = _insert_axis(slice_sizes, dx, min(1, size)), dx
    out = gather_p.bind(
        x,
        starts,
        dimension_numbers=dn,
        slice_sizes=sizes,
        indices_are_sorted=False,
        unique_indices=False,
        mode=GatherScatterMode.CLIP,
        fill_value=None,
    )
    return out, out_dim


dynamic_slice_p.batch = _dynamic_slice_batch


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The `slice_sizes` window of `operand` at (possibly traced) `start_indices`.

    Negative starts are first wrapped once (``i + dim``); then, as in XLA, each start is clamped so the
    window fits (a window running past the end shifts back).
    """
    indices = _normalize_indices("dynamic_slice", operand, start_indices, allow_negative_indices)
    sizes = canonical_shape(slice_sizes, "dynamic_slice", "slice_sizes")
    return dynamic_slice_p.bind(operand, *indices, slice_sizes=sizes)


def _zero_like_index(index):
    """A zero start of the same kind as `index` (so all starts end up with one dtype)."""
    return 0 if type(index) is int else make_array(0, get_aval(index).dtype)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *, allow_negative_indices=True):
    """`dynamic_slice` of `slice_size` elements along `axis`, whole along the other axes."""
    shape = get_aval(operand).shape
    axis = canonical_axis(axis, len(shape), "dynamic_slice_in_dim")
    starts = [_zero_like_index(start_index)] * len(shape)
    sizes = list(shape)
    starts[axis], sizes[axis] = start_index, operator.index(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """Element `index` (possibly traced) along `axis`; the size-1 axis is dropped unless `keepdims`."""
    result = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    if keepdims:
        return result
    return squeeze(result, (canonical_axis(axis, len(get_aval(operand).shape), "dynamic_index_in_dim"),))


def _dynamic_update_slice_abstract_eval(x, update, *indices):
    name = "dynamic_update_slice"
    if update.ndim != x.ndim:
        raise TypeError(
            f"{name}: update must have the same rank as operand, got update {update.str_short()} for operand "
            f"{x.str_short()}."
        )
    if any(u > n for u, n in zip(update.shape, x.shape)):
        raise TypeError(
            f"{name}: update shape must not exceed the operand shape, got update shape {update.shape} for operand "
            f"shape {x.shape}."
        )
    if update.dtype != x.dtype:
        raise TypeError(
            f"{name}: operand and update must have the same dtype, got {x.dtype.name} and {update.dtype.name}. "
            "Cast update with lax.convert_element_type."
        )
    _check_indices(name, x, indices)
    weak = x.weak_type and update.weak_type and all(i.weak_type for i in indices)
    return ShapedArray(x.shape, x.dtype, weak)


def _dynamic_update_slice_impl(x, update, *indices):
    starts = _clamped_starts(indices, x.shape, update.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + w) for s, w in zip(starts, update.shape))] = update
    return out


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.stablehlo = hlo.dynamic_update_slice
dynamic_update_slice_p.impl = _dynamic_update_slice_impl
dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_abstract_eval


# Writes the update into a copy of the operand at a runtime offset.
dynamic_update_slice_p.kind = Kind.SCATTER
_DUS_CONFIGS = (
    ((), (), ()),
    ((5,), (2,), (1,)),
    ((5,), (2,), (4,)),
    ((5,), (2,), (-3,)),
    ((4,), (4,), (1,)),
    ((4,), (0,), (9,)),
    ((3, 4), (2, 2), (2, 3)),
    ((3, 4), (0, 2), (1, 1)),
    ((2, 0), (1, 0), (5, 5)),
    ((1, 4), (1, 3), (-1, 2)),
)


def _dus_cases(rng):
    out = []
    for k, dt in enumerate(SHAPE_DTYPES):
        for shape, ushape, starts in _DUS_CONFIGS:
            idt = _INDEX_DTYPES[k]
            args = (random_array(rng, shape, dt), random_array(rng, ushape, dt), *_index_arrays(starts, idt))
            out.append(Case(args, {}, f"{dt}{list(shape)}<-{list(ushape)}@{starts}:{idt}"))
    return out


dynamic_update_slice_p.test_spec = TestSpec(cases=_dus_cases)


def _dus_jvp(primals, tangents):
    # Linear in operand and update; the start indices only choose where (no tangent).
    ans = dynamic_update_slice_p.bind(*primals)
    out_t = tangent_aval(aval_of(ans))
    t_x, t_u = tangents[:2]
    if (is_zero(t_x) and is_zero(t_u)) or out_t.dtype == _dtypes.float0:
        return ans, Zero(out_t)
    return ans, dynamic_update_slice_p.bind(instantiate(t_x), instantiate(t_u), *primals[2:])


def _dus_transpose(ct, operand, update, *indices):
    undef_x, undef_u = is_undefined_primal(operand), is_undefined_primal(update)
    u_aval = aval_of(update)
    rest = [None] * len(indices)
    if is_zero(ct):
        return [Zero(operand.aval) if undef_x else None, Zero(update.aval) if undef_u else None, *rest]
    t_x = t_u = None
    if undef_x:  # the overwritten window receives nothing
        zeros = zeros_like_aval(ShapedArray(u_aval.shape, aval_of(ct).dtype, False))
        t_x = dynamic_update_slice_p.bind(ct, zeros, *indices)
    if undef_u:
        t_u = dynamic_slice_p.bind(ct, *indices, slice_sizes=u_aval.shape)
    return [t_x, t_u, *rest]


dynamic_update_slice_p.jvp = _dus_jvp
dynamic_update_slice_p.transpose = _dus_transpose


def _dus_batch(vals, dims, *, axis_data):
    # Operand and update share one batch axis (the operand's when it is batched; an unbatched one
    # is broadcast). Unbatched starts gain a 0 there; batched starts make it a scatter of one
    # window per batch element (operand_batching_dims) in CLIP mode, clamped like the primitive.
    (x, u), indices = vals[:2], vals[2:]
    (dx, du), idims = dims[:2], dims[2:]
    size = axis_data.size
    bd = dx if dx is not None else du if du is not None else 0
    x, u = (_with_batch_axis(v, d, bd, size) for v, d in ((x, dx), (u, du)))
    if all(d is None for d in idims):
        zero = _zero_start(indices)
        return dynamic_update_slice_p.bind(x, u, *_insert_axis(indices, bd, zero)), bd
    n = len(get_aval(x).shape)
    others = tuple(k for k in range(n) if k != bd)
    dn = ScatterDimensionNumbers(
        update_window_dims=others,
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=others,
        operand_batching_dims=(bd,),
        scatter_indices_batching_dims=(0,),
    )
    out = scatter_p.bind(
        x,
        _batched_starts(indices, idims, size),
        u,
        dimension_numbers=dn,
        indices_are_sorted=True,
        unique_indices=True,
        mode=GatherScatterMode.CLIP,
        update_jaxpr=None,
        update_consts=(),
    )
    weak = all(get_aval(v).weak_type for v in vals)
    if get_aval(out).weak_type and not weak:  # the scatter's result is as weak as its operand only
        out = convert_element_type_p.bind(out, new_dtype=get_aval(out).dtype, weak_type=False, sharding=None)
    return out, bd


def _with_batch_axis(v, d, bd, size):
    """`v` with its batch axis at `bd` (broadcast along a new one there if it has none)."""
    if d is not None:
        return moveaxis(v, d, bd)
    shape = get_aval(v).shape
    keep = tuple(k for k in range(len(shape) + 1) if k != bd)
    return broadcast_in_dim(v, shape[:bd] + (size,) + shape[bd:], keep)


dynamic_update_slice_p.batch = _dus_batch


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """`operand` with the window at (possibly traced) `start_indices` replaced by `update`.

    Negative starts are wrapped once; then each start is clamped so `update` fits, as in XLA.
    """
    indices = _normalize_indices("dynamic_update_slice", operand, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *indices)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *, allow_negative_indices=True):
    """`dynamic_update_slice` at `start_index` along `axis` (0 along the other axes)."""
    ndim = len(get_aval(operand).shape)
    axis = canonical_axis(axis, ndim, "dynamic_update_slice_in_dim")
    starts = [_zero_like_index(start_index)] * ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    """Write `update` (with or without the size-1 `axis`) at position `index` along `axis`."""
    ndim = len(get_aval(operand).shape)
    axis = canonical_axis(axis, ndim, "dynamic_update_index_in_dim")
    if len(get_aval(update).shape) == ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )
