"""The `pad` primitive (low, high and interior padding, negative padding cropping) with all its rules."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
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
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._shape_util import (
    SHAPE_DTYPES,
    _axes_cases,
    _scalar_zero,
    _total,
    fresh,
)
from morphax._src.prims._spec import TestSpec, random_array
from morphax._src.prims.shape import broadcast_in_dim

__all__ = [
    "pad",
    "pad_p",
]


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
