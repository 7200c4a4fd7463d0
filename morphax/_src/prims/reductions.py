"""Reduction primitives: monoid reductions over axes, argmax/argmin, and cumulative scans.

Semantics follow JAX/XLA rather than NumPy: integer sums and products wrap in the operand dtype
(no upcasting), float max/min propagate NaN, empty reductions give the monoid identity, and
argmax/argmin treat NaN as the extreme value (first NaN wins). Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Primitive
from morphax._src.prims._helpers import check_dtype
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, random_array

__all__ = [
    "argmax",
    "argmax_p",
    "argmin",
    "argmin_p",
    "cumlogsumexp",
    "cumlogsumexp_p",
    "cummax",
    "cummax_p",
    "cummin",
    "cummin_p",
    "cumprod",
    "cumprod_p",
    "cumsum",
    "cumsum_p",
    "reduce_and",
    "reduce_and_p",
    "reduce_max",
    "reduce_max_p",
    "reduce_min",
    "reduce_min_p",
    "reduce_or",
    "reduce_or_p",
    "reduce_prod",
    "reduce_prod_p",
    "reduce_sum",
    "reduce_sum_p",
    "reduce_xor",
    "reduce_xor_p",
]

# float16/bfloat16 arithmetic is emulated in float32 by XLA's CPU backend; the references
# accumulate in float32 and round once at the end, which is also what NumPy cannot do for bfloat16.
_NARROW_FLOATS = (_dtypes.float16, _dtypes.bfloat16)


def _compute_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in _NARROW_FLOATS else dt


def _canon_axis(name: str, axis, ndim: int, shape) -> int:
    """Wrapper-side normalization: negative axes count from the end (JAX's lax wants them
    non-negative; accepting them here is a convenience, the bound param is always >= 0)."""
    axis = int(axis)
    if -ndim <= axis < 0:
        axis += ndim
    if not 0 <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of shape {tuple(shape)}")
    return axis


def _canon_axes(name: str, operand, axes) -> tuple:
    shape = get_aval(operand).shape
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    return tuple(_canon_axis(name, a, len(shape), shape) for a in axes)


def _check_axes(name: str, x: ShapedArray, axes) -> None:
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in 'axes' of reduction: {axes}")
    for a in axes:
        if not (isinstance(a, (int, np.integer)) and 0 <= a < x.ndim):
            raise ValueError(
                f"{name}: reduction axes {axes} contain an out-of-bounds axis {a} for an operand of "
                f"type {x.str_short()} (axes must lie in [0, {x.ndim}))."
            )


def _reduced_shape(shape, axes) -> tuple:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# ------------------------------------------------------------------------------------------------
# Monoid reductions.


def _max_identity(dt: np.dtype):
    if _dtypes.is_bool(dt):
        return False
    if _dtypes.is_integer(dt):
        return np.iinfo(dt).min
    return -np.inf


def _min_identity(dt: np.dtype):
    if _dtypes.is_bool(dt):
        return True
    if _dtypes.is_integer(dt):
        return np.iinfo(dt).max
    return np.inf


def _sum_impl(x, *, axes):
    dt = x.dtype
    return np.asarray(np.sum(x, axis=axes, dtype=_compute_dtype(dt))).astype(dt)


def _prod_impl(x, *, axes):
    dt = x.dtype
    return np.asarray(np.prod(x, axis=axes, dtype=_compute_dtype(dt))).astype(dt)


def _max_impl(x, *, axes):
    dt = x.dtype
    # np.max propagates NaN like XLA's max; `initial` supplies the identity for empty reductions.
    # Narrow floats widen exactly, so the result is the same element.
    init = np.array(_max_identity(dt)).astype(_compute_dtype(dt))
    return np.asarray(np.max(x.astype(init.dtype), axis=axes, initial=init)).astype(dt)


def _min_impl(x, *, axes):
    dt = x.dtype
    init = np.array(_min_identity(dt)).astype(_compute_dtype(dt))
    return np.asarray(np.min(x.astype(init.dtype), axis=axes, initial=init)).astype(dt)


def _logical_impl(ufunc, identity_bool, identity_int):
    def impl(x, *, axes):
        dt = x.dtype
        if _dtypes.is_bool(dt):
            return np.asarray(ufunc.reduce(x, axis=axes, initial=identity_bool)).astype(dt)
        init = np.array(identity_int).astype(dt)
        return np.asarray(ufunc.reduce(x, axis=axes, initial=init)).astype(dt)

    return impl


def _reduce_spec(dtype_list, specials=True):
    shapes_axes = (
        ((), ()),
        ((3,), ()),
        ((3,), (0,)),
        ((2, 3), (0,)),
        ((2, 3), (1,)),
        ((2, 3), (0, 1)),
        ((2, 3), (1, 0)),
        ((0,), (0,)),
        ((1, 4), (0,)),
        ((2, 0, 3), (1,)),
        ((2, 0, 3), (0, 2)),
        ((2, 0, 3), (0, 1, 2)),
    )

    def cases(rng):
        out = []
        for dt in dtype_list:
            for shape, axes in shapes_axes:
                x = random_array(rng, shape, dt)
                out.append(Case((x,), {"axes": axes}, f"{dt}{list(shape)}axes={axes}"))
            if specials and _dtypes.is_floating(np.dtype(dt)):
                sp = np.array(FLOAT_SPECIALS, dtype=np.float64).astype(dt)
                out.append(Case((sp,), {"axes": (0,)}, f"{dt}-specials"))
                grid = np.array([[1.0, np.nan, 2.0], [np.inf, -np.inf, 0.0], [-0.0, 0.0, -1.0]]).astype(dt)
                out.append(Case((grid,), {"axes": (1,)}, f"{dt}-nan-inf-rows"))
            if _dtypes.is_integer(np.dtype(dt)):
                info = np.iinfo(np.dtype(dt))
                ext = np.array([info.max, info.max, info.min, 1, info.max]).astype(dt)
                out.append(Case((ext,), {"axes": (0,)}, f"{dt}-wrap"))
        return out

    return cases


def _reduction(name, impl, dtypes, dtype_list, *, differentiable=True):
    prim = Primitive(name)

    def abstract_eval(x, *, axes):
        check_dtype(name, x.dtype, dtypes)
        _check_axes(name, x, axes)
        return ShapedArray(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)

    prim.impl = impl
    prim.abstract_eval = abstract_eval
    prim.test_spec = TestSpec(cases=_reduce_spec(dtype_list), differentiable=differentiable)
    return prim


_NUMERIC_LIST = ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "uint32", "complex64")
_ANY_LIST = ("float32", "bfloat16", "float16", "int32", "int8", "uint8", "uint32", "bool", "complex64")
_INT_BOOL_LIST = ("int32", "uint32", "int8", "uint8", "int16", "bool")

reduce_sum_p = _reduction("reduce_sum", _sum_impl, "numeric", _NUMERIC_LIST)


def reduce_sum(operand, axes):
    """Sum over `axes` (a sequence of distinct axes); integer sums wrap in the operand dtype."""
    return reduce_sum_p.bind(operand, axes=_canon_axes("reduce_sum", operand, axes))


reduce_prod_p = _reduction("reduce_prod", _prod_impl, "numeric", _NUMERIC_LIST)


def reduce_prod(operand, axes):
    """Product over `axes`; integer products wrap in the operand dtype."""
    return reduce_prod_p.bind(operand, axes=_canon_axes("reduce_prod", operand, axes))


reduce_max_p = _reduction("reduce_max", _max_impl, "any", _ANY_LIST)


def reduce_max(operand, axes):
    """Maximum over `axes`; NaN propagates; an empty reduction gives -inf (or the dtype minimum)."""
    return reduce_max_p.bind(operand, axes=_canon_axes("reduce_max", operand, axes))


reduce_min_p = _reduction("reduce_min", _min_impl, "any", _ANY_LIST)


def reduce_min(operand, axes):
    """Minimum over `axes`; NaN propagates; an empty reduction gives +inf (or the dtype maximum)."""
    return reduce_min_p.bind(operand, axes=_canon_axes("reduce_min", operand, axes))


# Bitwise for integers, logical for bool: all-ones is the `and` identity (-1 wraps to it).
reduce_and_p = _reduction(
    "reduce_and", _logical_impl(np.bitwise_and, True, -1), "int_or_bool", _INT_BOOL_LIST, differentiable=False
)


def reduce_and(operand, axes):
    """Logical (bool) or bitwise (integer) AND over `axes`."""
    return reduce_and_p.bind(operand, axes=_canon_axes("reduce_and", operand, axes))


reduce_or_p = _reduction(
    "reduce_or", _logical_impl(np.bitwise_or, False, 0), "int_or_bool", _INT_BOOL_LIST, differentiable=False
)


def reduce_or(operand, axes):
    """Logical (bool) or bitwise (integer) OR over `axes`."""
    return reduce_or_p.bind(operand, axes=_canon_axes("reduce_or", operand, axes))


reduce_xor_p = _reduction(
    "reduce_xor", _logical_impl(np.bitwise_xor, False, 0), "int_or_bool", _INT_BOOL_LIST, differentiable=False
)


def reduce_xor(operand, axes):
    """Logical (bool) or bitwise (integer) XOR over `axes`."""
    return reduce_xor_p.bind(operand, axes=_canon_axes("reduce_xor", operand, axes))


# ------------------------------------------------------------------------------------------------
# argmax / argmin.


def _argminmax(name, np_arg):
    prim = Primitive(name)

    def abstract_eval(x, *, axes, index_dtype):
        check_dtype(name, x.dtype, "real")
        if not (isinstance(axes, tuple) and len(axes) == 1):
            raise ValueError(f"{name}: axes must be a tuple holding exactly one axis, got {axes!r}")
        (axis,) = axes
        if not (isinstance(axis, (int, np.integer)) and 0 <= axis < x.ndim):
            raise ValueError(f"{name}: invalid axis {axis} for an operand of type {x.str_short()}")
        if x.shape[axis] < 1:
            raise ValueError(
                f"{name} requires a non-empty reduced dimension, got operand of shape {x.shape} and "
                f"axis={axis}."
            )
        index_dtype = np.dtype(index_dtype)
        if not _dtypes.is_integer(index_dtype):
            raise TypeError(f"{name}: index_dtype must be an integer type, got {index_dtype.name}")
        return ShapedArray(_reduced_shape(x.shape, axes), index_dtype, False)

    def impl(x, *, axes, index_dtype):
        (axis,) = axes
        if x.dtype in _NARROW_FLOATS:
            x = x.astype(np.float32)  # exact, order preserving; NumPy has no argmax loop for bfloat16
        # np.argmax/np.argmin return the first NaN (JAX's rule: NaN beats everything, first wins)
        # and the first of tied values, which also covers -0.0 == +0.0.
        return np.asarray(np_arg(x, axis=axis)).astype(index_dtype)

    def cases(rng):
        out = []
        shapes_axes = (((3,), 0), ((2, 3), 0), ((2, 3), 1), ((1, 4), 1), ((2, 1, 3), 1), ((4, 2, 0), 1))
        for dt in ("float32", "bfloat16", "float16", "int32", "uint8", "int8", "bool"):
            for shape, axis in shapes_axes:
                x = random_array(rng, shape, dt, (-2, 2) if not _dtypes.is_floating(np.dtype(dt)) else None)
                out.append(
                    Case(
                        (x,), {"axes": (axis,), "index_dtype": np.dtype("int32")}, f"{dt}{list(shape)}@{axis}"
                    )
                )
            if _dtypes.is_floating(np.dtype(dt)):
                rows = np.array(
                    [
                        [1.0, np.nan, 3.0, np.nan],
                        [-np.inf, -np.inf, 0.0, -0.0],
                        [np.inf, 1.0, np.inf, 2.0],
                        [-0.0, 0.0, -0.0, 0.0],
                        [np.nan, np.nan, np.nan, np.nan],
                        [2.0, 1.0, 1.0, 2.0],
                    ]
                ).astype(dt)
                out.append(Case((rows,), {"axes": (1,), "index_dtype": np.dtype("int32")}, f"{dt}-nan-rows"))
                out.append(Case((rows,), {"axes": (0,), "index_dtype": np.dtype("int16")}, f"{dt}-nan-cols"))
        return out

    prim.impl = impl
    prim.abstract_eval = abstract_eval
    prim.test_spec = TestSpec(cases=cases, differentiable=False)
    return prim


argmax_p = _argminmax("argmax", np.argmax)


def argmax(operand, axis, index_dtype):
    """Index of the maximum along `axis` (first one on ties; NaN counts as the maximum)."""
    axis = _canon_axes("argmax", operand, (axis,))
    return argmax_p.bind(operand, axes=axis, index_dtype=_dtypes.canonicalize_dtype(index_dtype))


argmin_p = _argminmax("argmin", np.argmin)


def argmin(operand, axis, index_dtype):
    """Index of the minimum along `axis` (first one on ties; NaN counts as the minimum)."""
    axis = _canon_axes("argmin", operand, (axis,))
    return argmin_p.bind(operand, axes=axis, index_dtype=_dtypes.canonicalize_dtype(index_dtype))


# ------------------------------------------------------------------------------------------------
# Cumulative reductions.


def _cumulative(name, accumulate, dtypes, dtype_list, *, tol=None):
    prim = Primitive(name)

    def abstract_eval(x, *, axis, reverse):
        check_dtype(name, x.dtype, dtypes)
        if not (isinstance(axis, (int, np.integer)) and 0 <= axis < x.ndim):
            raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of type {x.str_short()}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    def impl(x, *, axis, reverse):
        dt = x.dtype
        y = x.astype(_compute_dtype(dt))
        if reverse:
            y = np.flip(y, axis)
        y = accumulate(y, axis)
        if reverse:
            y = np.flip(y, axis)
        return np.ascontiguousarray(y).astype(dt)

    def cases(rng):
        out = []
        shapes_axes = (
            ((3,), 0),
            ((2, 3), 0),
            ((2, 3), 1),
            ((0,), 0),
            ((2, 0, 3), 1),
            ((1, 5), 1),
            ((3, 1), 1),
        )
        for dt in dtype_list:
            for shape, axis in shapes_axes:
                x = random_array(rng, shape, dt)
                for reverse in (False, True):
                    out.append(
                        Case((x,), {"axis": axis, "reverse": reverse}, f"{dt}{list(shape)}@{axis}r={reverse}")
                    )
            if _dtypes.is_floating(np.dtype(dt)):
                sp = np.array(FLOAT_SPECIALS, dtype=np.float64).astype(dt)
                out.append(Case((sp,), {"axis": 0, "reverse": False}, f"{dt}-specials"))
                out.append(Case((sp,), {"axis": 0, "reverse": True}, f"{dt}-specials-rev"))
            if _dtypes.is_integer(np.dtype(dt)):
                info = np.iinfo(np.dtype(dt))
                ext = np.array([info.max, info.max, info.min, 3, info.max]).astype(dt)
                out.append(Case((ext,), {"axis": 0, "reverse": False}, f"{dt}-wrap"))
        return out

    prim.impl = impl
    prim.abstract_eval = abstract_eval
    prim.test_spec = TestSpec(cases=cases, tol=tol)
    return prim


def _acc(ufunc):
    def accumulate(y, axis):
        # dtype= keeps integer scans in the operand dtype so they wrap instead of widening.
        return ufunc.accumulate(y, axis=axis, dtype=y.dtype)

    return accumulate


_CUM_NUMERIC = ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "complex64")
_CUM_REAL = ("float32", "float16", "bfloat16", "int32", "uint8", "int8")

cumsum_p = _cumulative("cumsum", _acc(np.add), "numeric", _CUM_NUMERIC)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running sum along `axis` (from the end when `reverse`); integers wrap."""
    axis = _canon_axes("cumsum", operand, (axis,))[0]
    return cumsum_p.bind(operand, axis=axis, reverse=bool(reverse))


cumprod_p = _cumulative("cumprod", _acc(np.multiply), "numeric", _CUM_NUMERIC)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running product along `axis`; integers wrap."""
    axis = _canon_axes("cumprod", operand, (axis,))[0]
    return cumprod_p.bind(operand, axis=axis, reverse=bool(reverse))


cummax_p = _cumulative("cummax", _acc(np.maximum), "real_numeric", _CUM_REAL)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running maximum along `axis`; a NaN propagates to every later position."""
    axis = _canon_axes("cummax", operand, (axis,))[0]
    return cummax_p.bind(operand, axis=axis, reverse=bool(reverse))


cummin_p = _cumulative("cummin", _acc(np.minimum), "real_numeric", _CUM_REAL)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running minimum along `axis`; a NaN propagates to every later position."""
    axis = _canon_axes("cummin", operand, (axis,))[0]
    return cummin_p.bind(operand, axis=axis, reverse=bool(reverse))


# np.logaddexp is the stable log(exp(a) + exp(b)): no overflow for large inputs, -inf identity.
cumlogsumexp_p = _cumulative("cumlogsumexp", _acc(np.logaddexp), "float", ("float32", "float16", "bfloat16"))


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running log-sum-exp along `axis`, computed stably."""
    axis = _canon_axes("cumlogsumexp", operand, (axis,))[0]
    return cumlogsumexp_p.bind(operand, axis=axis, reverse=bool(reverse))
