"""Reduction primitives: monoid reductions over axes, argmax/argmin, and cumulative scans.

Semantics follow JAX/XLA rather than NumPy: integer sums and products wrap in the operand dtype
(no upcasting), float max/min propagate NaN, empty reductions give the monoid identity, and
argmax/argmin treat NaN as the extreme value (first NaN wins). Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import structural
from morphax._src.core.ad_util import Zero, aval_of, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.structural import broadcast_in_dim, reshape, transpose
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims import _stablehlo_windows as hlo_windows
from morphax._src.prims import arithmetic
from morphax._src.prims._ad import defjvp, defjvp_zero, deflinear
from morphax._src.prims._shape_util import axis_of_shape
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, random_array
from morphax._src.prims.arithmetic import add, div, mul, sub
from morphax._src.prims.builders import check_dtype
from morphax._src.prims.compare import eq, gt, lt
from morphax._src.prims.concatenate import concatenate
from morphax._src.prims.conversion import convert_element_type, full, full_like
from morphax._src.prims.selection import select_n
from morphax._src.prims.slicing import slice_in_dim
from morphax._src.prims.transcendental import exp, log1p

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
_NARROW_FLOATS = {_dtypes.float16}
_dtypes.when_ml_dtypes_loaded(lambda: _NARROW_FLOATS.add(_dtypes.bfloat16))  # bfloat16 joins then


def _compute_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in _NARROW_FLOATS else dt


def _canon_axes(name: str, operand, axes) -> tuple:
    shape = get_aval(operand).shape
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    return tuple(axis_of_shape(name, a, shape) for a in axes)


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


def _kept_dims(ndim: int, axes) -> tuple:
    return tuple(i for i in range(ndim) if i not in axes)


# ---------------------------------------------------------------------------- Monoid reductions


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


# float32 and complex64 sums accumulate in double width and round once, as the C backend's
# kernels do (render.py's `_acc_dtype`, which documents the order): NumPy alone adds a
# non-contiguous axis (axis 0 of a tall matrix) naively in float32, an error growing with the
# length (5e-4 relative over 10**6 rows) where XLA's is a few ulps. In float64 the row-by-row
# order stays within ~n * 1e-16 before the final rounding, so eager, NumPy-backend and C-backend
# results agree (bit for bit along a non-contiguous axis) and do not depend on threads.
_SUM_ACCUMULATOR = {
    np.dtype(np.float32): np.dtype(np.float64),
    np.dtype(np.complex64): np.dtype(np.complex128),
}


def _sum_impl(x, *, axes):
    dt = x.dtype
    acc = _SUM_ACCUMULATOR.get(dt) or _compute_dtype(dt)
    return np.asarray(np.sum(x, axis=axes, dtype=acc)).astype(dt)


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


def _reduction(name, impl, dtypes, dtype_list, *, differentiable=True, declared=None):
    """A reduction primitive over `axes`; `declared` is its Primitive when the core already
    declares it (reduce_sum, see core/structural.py)."""
    prim = declared or Primitive(name)
    prim.kind = Kind.REDUCE  # combines the elements along `axes`
    prim.kernel_op = name

    def abstract_eval(x, *, axes):
        check_dtype(name, x.dtype, dtypes)
        _check_axes(name, x, axes)
        return ShapedArray(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)

    prim.impl = impl
    prim.abstract_eval = abstract_eval
    prim.test_spec = TestSpec(cases=_reduce_spec(dtype_list), differentiable=differentiable)
    prim.batch = _axes_batcher(prim)
    return prim


def _axes_batcher(prim):
    """Batching rule of a reduction over `axes`: the axes move around the batch axis, which then
    sits among the kept axes (also used by argmax/argmin, whose other params pass through)."""

    def rule(vals, dims, *, axis_data, axes, **params):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        return prim.bind(x, axes=new_axes, **params), d - sum(1 for a in axes if a < d)

    return rule


_NUMERIC_LIST = ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "uint32", "complex64")
_ANY_LIST = ("float32", "bfloat16", "float16", "int32", "int8", "uint8", "uint32", "bool", "complex64")
_INT_BOOL_LIST = ("int32", "uint32", "int8", "uint8", "int16", "bool")

reduce_sum_p = _reduction("reduce_sum", _sum_impl, "numeric", _NUMERIC_LIST, declared=structural.reduce_sum_p)
reduce_sum_p.stablehlo = hlo.reduction("stablehlo.add", lambda dtype: 0)
_sum_abstract_eval = reduce_sum_p.abstract_eval


def _reduce_sum_abstract_eval(x, *, axes):
    if not config.allow_f16_reductions and _dtypes.is_16bit_float(x.dtype):
        raise TypeError(f"reduce_sum of {x.str_short()} with jax_allow_f16_reductions=False: sum in float32")
    return _sum_abstract_eval(x, axes=axes)


reduce_sum_p.abstract_eval = _reduce_sum_abstract_eval
# JAX's reduce_sum also holds out_sharding, None on one device (morphax's has no such
# parameter): printed as JAX prints it.
reduce_sum_p.pp_params = lambda eqn, params: {**params, "out_sharding": None}


def reduce_sum(operand, axes):
    """Sum over `axes` (a sequence of distinct axes); integer sums wrap in the operand dtype."""
    return reduce_sum_p.bind(operand, axes=_canon_axes("reduce_sum", operand, axes))


def _reduce_sum_transpose(ct, operand, *, axes):
    # Linear: every summed element receives the cotangent of its sum.
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval)]
    return [broadcast_in_dim(ct, aval.shape, _kept_dims(len(aval.shape), axes))]


deflinear(reduce_sum_p, _reduce_sum_transpose)


reduce_prod_p = _reduction("reduce_prod", _prod_impl, "numeric", _NUMERIC_LIST)
reduce_prod_p.stablehlo = hlo.reduction("stablehlo.multiply", lambda dtype: 1)


def reduce_prod(operand, axes):
    """Product over `axes`; integer products wrap in the operand dtype."""
    return reduce_prod_p.bind(operand, axes=_canon_axes("reduce_prod", operand, axes))


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod = sum_j t_j * prod_{k != j} x_k, the product of the others taken as (exclusive
    # running product from the left) * (from the right): exact when some x_k are zero.
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    out = tangent_aval(get_aval(ans))
    if is_zero(t) or out.dtype == _dtypes.float0:
        return ans, Zero(out)
    shape = aval_of(x).shape
    kept = _kept_dims(len(shape), axes)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    m = int(np.prod([shape[k] for k in kept], dtype=np.int64))
    if n == 0:
        return ans, Zero(out)
    perm = tuple(axes) + kept

    def rows(v):  # reduced axes first, flattened: (n, m)
        if perm != tuple(range(len(shape))):
            v = transpose(v, perm)
        return reshape(v, (n, m))

    tf = rows(t)
    if n == 1:
        return ans, reshape(tf, out.shape)
    xf = rows(x)
    ones = full((1, m), 1, out.dtype)
    left = concatenate([ones, slice_in_dim(cumprod(xf, 0), 0, n - 1, axis=0)], 0)
    right = concatenate([slice_in_dim(cumprod(xf, 0, reverse=True), 1, n, axis=0), ones], 0)
    out_t = structural.reduce_sum(mul(tf, mul(left, right)), (0,))
    return ans, reshape(out_t, out.shape)


reduce_prod_p.jvp = _reduce_prod_jvp


reduce_max_p = _reduction("reduce_max", _max_impl, "any", _ANY_LIST)
reduce_max_p.stablehlo = hlo.reduction("stablehlo.maximum", hlo.lowest)


def reduce_max(operand, axes):
    """Maximum over `axes`; NaN propagates; an empty reduction gives -inf (or the dtype minimum)."""
    return reduce_max_p.bind(operand, axes=_canon_axes("reduce_max", operand, axes))


def _chooser_jvp(g, ans, operand, *, axes):
    # The tangent of the elements equal to the extremum; ties share it equally (JAX's rule).
    shape = aval_of(operand).shape
    hit = eq(operand, broadcast_in_dim(ans, shape, _kept_dims(len(shape), axes)))
    where = convert_element_type(hit, aval_of(g).dtype)
    return div(structural.reduce_sum(mul(g, where), axes), structural.reduce_sum(where, axes))


defjvp(reduce_max_p, _chooser_jvp)


reduce_min_p = _reduction("reduce_min", _min_impl, "any", _ANY_LIST)
reduce_min_p.stablehlo = hlo.reduction("stablehlo.minimum", hlo.highest)


def reduce_min(operand, axes):
    """Minimum over `axes`; NaN propagates; an empty reduction gives +inf (or the dtype maximum)."""
    return reduce_min_p.bind(operand, axes=_canon_axes("reduce_min", operand, axes))


defjvp(reduce_min_p, _chooser_jvp)


# Bitwise for integers, logical for bool: all-ones is the `and` identity (-1 wraps to it).
reduce_and_p = _reduction(
    "reduce_and", _logical_impl(np.bitwise_and, True, -1), "int_or_bool", _INT_BOOL_LIST, differentiable=False
)
reduce_and_p.stablehlo = hlo.reduction("stablehlo.and", hlo.all_ones)


def reduce_and(operand, axes):
    """Logical (bool) or bitwise (integer) AND over `axes`."""
    return reduce_and_p.bind(operand, axes=_canon_axes("reduce_and", operand, axes))


defjvp_zero(reduce_and_p)


reduce_or_p = _reduction(
    "reduce_or", _logical_impl(np.bitwise_or, False, 0), "int_or_bool", _INT_BOOL_LIST, differentiable=False
)
reduce_or_p.stablehlo = hlo.reduction("stablehlo.or", lambda dtype: 0)


def reduce_or(operand, axes):
    """Logical (bool) or bitwise (integer) OR over `axes`."""
    return reduce_or_p.bind(operand, axes=_canon_axes("reduce_or", operand, axes))


defjvp_zero(reduce_or_p)


reduce_xor_p = _reduction(
    "reduce_xor", _logical_impl(np.bitwise_xor, False, 0), "int_or_bool", _INT_BOOL_LIST, differentiable=False
)
reduce_xor_p.stablehlo = hlo.reduction("stablehlo.xor", lambda dtype: 0)


def reduce_xor(operand, axes):
    """Logical (bool) or bitwise (integer) XOR over `axes`."""
    return reduce_xor_p.bind(operand, axes=_canon_axes("reduce_xor", operand, axes))


defjvp_zero(reduce_xor_p)


# ------------------------------------------------------------------------------ argmax / argmin


def _argminmax(name, np_arg):
    prim = Primitive(name)
    prim.kind = Kind.REDUCE  # along its one axis in `axes`, to an index of `index_dtype`
    prim.kernel_op = name

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
    prim.batch = _axes_batcher(prim)
    return prim


argmax_p = _argminmax("argmax", np.argmax)
argmax_p.stablehlo = hlo.argminmax("GT")


def argmax(operand, axis, index_dtype):
    """Index of the maximum along `axis` (first one on ties; NaN counts as the maximum)."""
    axis = _canon_axes("argmax", operand, (axis,))
    return argmax_p.bind(operand, axes=axis, index_dtype=_dtypes.canonicalize_dtype(index_dtype))


defjvp_zero(argmax_p)


argmin_p = _argminmax("argmin", np.argmin)
argmin_p.stablehlo = hlo.argminmax("LT")


def argmin(operand, axis, index_dtype):
    """Index of the minimum along `axis` (first one on ties; NaN counts as the minimum)."""
    axis = _canon_axes("argmin", operand, (axis,))
    return argmin_p.bind(operand, axes=axis, index_dtype=_dtypes.canonicalize_dtype(index_dtype))


defjvp_zero(argmin_p)


# ------------------------------------------------------------------------ Cumulative reductions


def _cumulative(name, accumulate, dtypes, dtype_list, *, tol=None):
    prim = Primitive(name)
    prim.kind = Kind.OPAQUE  # a scan along `axis` (in a fixed tree order for sums and products)

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

    def batch(vals, dims, *, axis_data, axis, reverse):
        # The scan axis moves past the batch axis, which stays where it is.
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d

    prim.batch = batch
    return prim


# Derivatives of the scans: cumsum is linear; cumprod/cummax/cummin/cumlogsumexp push
# (value, tangent) pairs through an inclusive Hillis-Steele scan whose combine step is the JVP of
# the binary operation (as JAX differentiates its associative scan): log2(n) rounds of
# elementwise work, exact (no division) and built from primitives, so it differentiates again.


def _scan_tangent(combine, x, t, axis, reverse):
    n = aval_of(x).shape[axis]
    p, tt = x, t
    s = 1
    while s < n:
        lo = [slice_in_dim(v, 0, n - s, axis=axis) for v in (p, tt)]
        hi = [slice_in_dim(v, s, n, axis=axis) for v in (p, tt)]
        cp, ctt = combine(lo[0], lo[1], hi[0], hi[1])
        if reverse:  # element i absorbs the run that starts at i + s
            p = concatenate([cp, slice_in_dim(p, n - s, n, axis=axis)], axis)
            tt = concatenate([ctt, slice_in_dim(tt, n - s, n, axis=axis)], axis)
        else:  # element i absorbs the run that ends at i - s
            p = concatenate([slice_in_dim(p, 0, s, axis=axis), cp], axis)
            tt = concatenate([slice_in_dim(tt, 0, s, axis=axis), ctt], axis)
        s *= 2
    return tt


def _scan_jvp(prim, combine):
    def jvp(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        out = tangent_aval(get_aval(ans))
        if is_zero(t) or out.dtype == _dtypes.float0:
            return ans, Zero(out)
        return ans, _scan_tangent(combine, x, t, axis, reverse)

    prim.jvp = jvp
    return jvp


def _mul_combine(a, ta, b, tb):
    return mul(a, b), add(mul(ta, b), mul(a, tb))


def _extremum_combine(better, pick):
    # The value of lax.max/min; the tangent of the winning side, ties (and NaN) averaging both.
    def combine(a, ta, b, tb):
        a_wins, b_wins = better(a, b), better(b, a)
        avg = mul(add(ta, tb), 0.5)
        return pick(a, b), select_n(a_wins, select_n(b_wins, avg, tb), ta)

    return combine


def _logaddexp_combine(a, ta, b, tb):
    # p = log(e^a + e^b) = hi + log1p(e^(lo - hi)); the weights e^(a - p), e^(b - p) lie in [0, 1].
    # When both are -inf the sum is -inf and both weights are 0.
    hi, lo = arithmetic.max(a, b), arithmetic.min(a, b)
    empty = eq(hi, -np.inf)
    zero = full_like(hi, 0)
    p = add(hi, log1p(exp(sub(lo, select_n(empty, hi, zero)))))
    ref = select_n(empty, p, zero)
    return p, add(mul(ta, exp(sub(a, ref))), mul(tb, exp(sub(b, ref))))


def _acc(ufunc, tree=False):
    """The reference scan. Integer scans are exact in any order, so they accumulate left to right
    (dtype= keeps them in the operand dtype so they wrap instead of widening). With `tree`, float
    and complex scans combine as a balanced tree instead, as JAX's associative scan does: a running
    sum of 1e7 float32 0.1s is then within a few ulp of 1e6 rather than 8.8% off."""

    def accumulate(y, axis):
        if not tree or y.dtype.kind not in "fc" or y.shape[axis] <= 1:
            return ufunc.accumulate(y, axis=axis, dtype=y.dtype)
        return np.moveaxis(_blocked_scan(ufunc, np.moveaxis(y, axis, -1)), -1, axis)

    return accumulate


_SCAN_BLOCK = 16


def _doubling_scan(op, y):
    """Inclusive scan along the *first* axis by Hillis-Steele doubling: after the round with
    stride s, entry i combines the window of 2s entries ending at i from two windows of s, so
    every output is a balanced tree over its prefix and rounding error grows like log2(n)."""
    n, s = y.shape[0], 1
    y = np.array(y, copy=True, order="C")  # rows contiguous, whatever view came in
    other = np.empty_like(y)  # rounds ping-pong between two buffers: no temporaries, no aliasing
    while s < n:
        op(y[:-s], y[s:], out=other[s:])
        other[:s] = y[:s]
        y, other = other, y
        s *= 2
    return y


def _blocked_scan(op, y):
    """Tree-shaped inclusive scan along the last axis in O(n) work: `_doubling_scan` within blocks
    of _SCAN_BLOCK, then each block is offset by the (recursive, equally tree-shaped) scan of the
    block totals. Blocks are laid out along the first axis so the rounds run over long rows."""
    n = y.shape[-1]
    if n <= _SCAN_BLOCK:
        return np.moveaxis(_doubling_scan(op, np.moveaxis(y, -1, 0)), 0, -1)
    m = -(-n // _SCAN_BLOCK)
    if m * _SCAN_BLOCK != n:  # pad the tail; padding only reaches outputs past n, cut off below
        y = np.concatenate([y, np.zeros(y.shape[:-1] + (m * _SCAN_BLOCK - n,), y.dtype)], axis=-1)
    # (..., m * B) -> (B, ..., m): entry [j, ..., b] is element j of block b.
    r = _doubling_scan(op, np.moveaxis(y.reshape(y.shape[:-1] + (m, _SCAN_BLOCK)), -1, 0))
    totals = _blocked_scan(op, r[-1])
    r[..., 1:] = op(totals[..., :-1], r[..., 1:])
    return np.moveaxis(r, 0, -1).reshape(y.shape)[..., :n]


_CUM_NUMERIC = ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "complex64")
_CUM_REAL = ("float32", "float16", "bfloat16", "int32", "uint8", "int8")

cumsum_p = _cumulative("cumsum", _acc(np.add, tree=True), "numeric", _CUM_NUMERIC)
cumsum_p.stablehlo = hlo_windows.cumulative("stablehlo.add", lambda dtype: 0)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running sum along `axis` (from the end when `reverse`); integers wrap."""
    axis = _canon_axes("cumsum", operand, (axis,))[0]
    return cumsum_p.bind(operand, axis=axis, reverse=bool(reverse))


def _cumsum_transpose(ct, operand, *, axis, reverse):
    # Each input feeds every later (earlier, when reversed) running sum.
    if is_zero(ct):
        return [Zero(operand.aval)]
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


deflinear(cumsum_p, _cumsum_transpose)


cumprod_p = _cumulative("cumprod", _acc(np.multiply, tree=True), "numeric", _CUM_NUMERIC)
cumprod_p.stablehlo = hlo_windows.cumulative("stablehlo.multiply", lambda dtype: 1)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running product along `axis`; integers wrap."""
    axis = _canon_axes("cumprod", operand, (axis,))[0]
    return cumprod_p.bind(operand, axis=axis, reverse=bool(reverse))


_scan_jvp(cumprod_p, _mul_combine)


cummax_p = _cumulative("cummax", _acc(np.maximum), "real_numeric", _CUM_REAL)
cummax_p.stablehlo = hlo_windows.cumulative("stablehlo.maximum", hlo.lowest)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running maximum along `axis`; a NaN propagates to every later position."""
    axis = _canon_axes("cummax", operand, (axis,))[0]
    return cummax_p.bind(operand, axis=axis, reverse=bool(reverse))


_scan_jvp(cummax_p, _extremum_combine(gt, arithmetic.max))


cummin_p = _cumulative("cummin", _acc(np.minimum), "real_numeric", _CUM_REAL)
cummin_p.stablehlo = hlo_windows.cumulative("stablehlo.minimum", hlo.highest)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running minimum along `axis`; a NaN propagates to every later position."""
    axis = _canon_axes("cummin", operand, (axis,))[0]
    return cummin_p.bind(operand, axis=axis, reverse=bool(reverse))


_scan_jvp(cummin_p, _extremum_combine(lt, arithmetic.min))


# np.logaddexp is the stable log(exp(a) + exp(b)): no overflow for large inputs, -inf identity.
cumlogsumexp_p = _cumulative(
    "cumlogsumexp", _acc(np.logaddexp, tree=True), "float", ("float32", "float16", "bfloat16")
)
cumlogsumexp_p.stablehlo = hlo_windows.cumulative("logaddexp", hlo.lowest)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """Inclusive running log-sum-exp along `axis`, computed stably."""
    axis = _canon_axes("cumlogsumexp", operand, (axis,))[0]
    return cumlogsumexp_p.bind(operand, axis=axis, reverse=bool(reverse))


_scan_jvp(cumlogsumexp_p, _logaddexp_combine)
