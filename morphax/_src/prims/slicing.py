"""Static slicing and padding: `slice` (with slice_in_dim and index_in_dim) and `pad` (low, high
and interior padding; negative padding crops). Each is the other's transpose, so they live together.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import (
    Zero,
    aval_of,
    is_undefined_primal,
    is_zero,
    zeros_like_aval,
)
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import deflinear
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._shape_util import (
    SHAPE_DTYPES,
    _axes_cases,
    _scalar_zero,
    _total,
    canonical_axis,
    canonical_shape,
    fresh,
)
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.arithmetic import sub
from morphax._src.prims.conversion import full
from morphax._src.prims.selection import select_n
from morphax._src.prims.shape import broadcast_in_dim, squeeze

__all__ = ["slice_p", "slice", "slice_in_dim", "index_in_dim", "pad_p", "pad"]


_pyslice = slice  # `slice` is redefined below as the lax function


def _ints(name, what, values):
    return canonical_shape(values, name, what)


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    name = "slice"
    for what, v in (("start_indices", start_indices), ("limit_indices", limit_indices)):
        if not isinstance(v, tuple) or len(v) != x.ndim:
            raise TypeError(
                f"{name}: {what} must have one entry per operand dimension, got {what} {v} for operand shape "
                f"{x.shape}."
            )
    if any(s < 0 for s in start_indices):
        raise TypeError(
            f"{name}: start_indices must be >= 0, got {start_indices} for operand shape {x.shape}."
        )
    if any(lim > n for lim, n in zip(limit_indices, x.shape)):
        raise TypeError(
            f"{name}: limit_indices must be <= the operand shape, got limit_indices {limit_indices} for operand "
            f"shape {x.shape}."
        )
    if any(lim < s for s, lim in zip(start_indices, limit_indices)):
        raise TypeError(
            f"{name}: limit_indices must be >= start_indices, got start_indices {start_indices} and "
            f"limit_indices {limit_indices} (operand shape {x.shape})."
        )
    if strides is None:
        strides = (1,) * x.ndim
    if not isinstance(strides, tuple) or len(strides) != x.ndim:
        raise TypeError(
            f"{name}: strides must have one entry per operand dimension, got {strides} for operand "
            f"shape {x.shape}."
        )
    if any(s < 1 for s in strides):
        raise TypeError(f"{name}: strides must be positive, got {strides}.")
    shape = tuple(-(-(lim - s) // st) for s, lim, st in zip(start_indices, limit_indices, strides))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return fresh(x[tuple(_pyslice(s, lim, st) for s, lim, st in zip(start_indices, limit_indices, strides))])


def _slice_index_map(out_index, x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return [tuple(s + i * st for i, s, st in zip(out_index, start_indices, strides))]


slice_p = Primitive("slice")
slice_p.stablehlo = hlo.slice_
slice_p.impl = _slice_impl
slice_p.abstract_eval = _slice_abstract_eval
slice_p.kind = Kind.LAYOUT
slice_p.index_map = _slice_index_map
_SLICE_CONFIGS = (
    ((), (), (), None),
    ((5,), (1,), (4,), None),
    ((5,), (0,), (5,), (2,)),
    ((6,), (1,), (6,), (3,)),
    ((7,), (0,), (7,), (10,)),
    ((5,), (2,), (2,), (4,)),
    ((3,), (3,), (3,), None),
    ((4, 5), (1, 0), (3, 5), (1, 2)),
    ((0, 3), (0, 1), (0, 3), None),
    ((1, 4), (0, 1), (1, 4), (1, 1)),
    ((2, 3, 4), (0, 1, 1), (2, 3, 4), (2, 1, 2)),
)


def _slice_cases(rng):
    out = []
    for dt in SHAPE_DTYPES:
        for shape, start, limit, strides in _SLICE_CONFIGS:
            p = dict(start_indices=start, limit_indices=limit, strides=strides)
            out.append(
                Case((random_array(rng, shape, dt),), p, f"{dt}{list(shape)}{start}:{limit}:{strides}")
            )
    return out


slice_p.test_spec = TestSpec(cases=_slice_cases)


def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
    # Scatter `ct` back to its places with zeros around it: low/high padding to the slice's bounds,
    # interior padding stride - 1 between the strided elements.
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval)]
    out_shape = aval_of(ct).shape
    if strides is None or all(st == 1 for st in strides):
        config = tuple((s, n - lim, 0) for s, lim, n in zip(start_indices, limit_indices, aval.shape))
    else:
        config = []
        for s, st, o, n in zip(start_indices, strides, out_shape, aval.shape):
            last = s + (o - 1) * st + 1 if o else s  # one past the last element taken
            config.append((s, n - last, st - 1))
        config = tuple(config)
    zero = zeros_like_aval(ShapedArray((), aval_of(ct).dtype, False))
    return [pad_p.bind(ct, zero, padding_config=config)]


deflinear(slice_p, _slice_transpose)


def _slice_batch(vals, dims, *, axis_data, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    out = slice_p.bind(
        x,
        start_indices=start_indices[:d] + (0,) + start_indices[d:],
        limit_indices=limit_indices[:d] + (axis_data.size,) + limit_indices[d:],
        strides=None if strides is None else strides[:d] + (1,) + strides[d:],
    )
    return out, d


slice_p.batch = _slice_batch


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 - JAX's name
    """``operand[start:limit:stride]`` along every axis, with static bounds."""
    return slice_p.bind(
        operand,
        start_indices=_ints("slice", "start_indices", start_indices),
        limit_indices=_ints("slice", "limit_indices", limit_indices),
        strides=None if strides is None else _ints("slice", "strides", strides),
    )


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """`slice` along one `axis`; None bounds mean the whole axis, negative bounds count from the end."""
    shape = get_aval(operand).shape
    axis = canonical_axis(axis, len(shape), "slice_in_dim")
    n = shape[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = n if limit_index is None else operator.index(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """Element `index` (negative counts from the end) along `axis`, keeping a size-1 axis if `keepdims`."""
    shape = get_aval(operand).shape
    axis = canonical_axis(axis, len(shape), "index_in_dim")
    index, n = operator.index(index), shape[axis]
    wrapped = index + n if index < 0 else index
    if not 0 <= wrapped < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


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
        _pyslice(max(lo, 0), max(lo, 0) + _dilated(n, i), i + 1)
        for (lo, hi, i), n in zip(padding_config, x.shape)
    )
    out[place] = x
    crop = tuple(_pyslice(max(-lo, 0), g - max(-hi, 0)) for (lo, hi, _), g in zip(padding_config, grown))
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
pad_p.stablehlo = hlo.pad
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
        t_x = slice_p.bind(
            uncropped,
            start_indices=(0,) * len(x_shape),
            limit_indices=aval_of(uncropped).shape,
            strides=tuple(i + 1 for _, _, i in padding_config),
        )
    t_v = sub(_total(ct), _total(t_x)) if undef_v else None
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
    mask = pad_p.bind(full(x_shape, True, bool), full((), False, bool), padding_config=padding_config)
    mask = broadcast_in_dim(mask, out_shape, others)
    fill = broadcast_in_dim(v, out_shape, (d,))
    return select_n(mask, fill, padded), d


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
