"""Binary elementwise arithmetic primitives: add sub mul div rem pow max min atan2 nextafter complex
mulhi.

Operands share a dtype (pow also takes an integer exponent); shapes follow lax broadcasting
(scalars, size-1 axes). Integer semantics are XLA's: wrapping arithmetic, division toward zero,
and no trap on overflow: ``x / 0`` is -1 (all bits set, so the maximum for unsigned), ``INT_MIN / -1``
is INT_MIN, ``x % 0`` is x and ``INT_MIN % -1`` is 0. Float max/min propagate nan and order
-0.0 below +0.0 (IEEE 754-2019 maximum/minimum, as stablehlo specifies). Derivative rules follow
JAX's (max/min split ties evenly, pow's exponent derivative is 0 at x == 0); transposes sum
cotangents back over broadcast axes and never conjugate. Every one batches (vmap) with the
broadcasting rule of `builders.elementwise_batcher`. Imports the core and the rule helpers;
other lax functions are looked up when a rule runs.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Primitive
from morphax._src.core.values import make_array
from morphax._src.prims._ad import (
    Zero,
    _lax,
    aval_of,
    defjvp,
    defjvp_zero,
    deflinear,
    is_undefined_primal,
    is_zero,
    unbroadcast,
)
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._spec import BINARY_SHAPES, Case, TestSpec, binary_cases, random_array
from morphax._src.prims.builders import (
    as_arrays,
    binary_elementwise,
    broadcasting_shape,
    check_class,
    concat_cases,
    elementwise_batcher,
    mark_elementwise,
    same_dtypes,
)

__all__ = [
    "add",
    "add_p",
    "atan2",
    "atan2_p",
    "complex",
    "complex_p",
    "div",
    "div_p",
    "max",
    "max_p",
    "min",
    "min_p",
    "mul",
    "mul_p",
    "mulhi",
    "mulhi_p",
    "nextafter",
    "nextafter_p",
    "pow",
    "pow_p",
    "rem",
    "rem_p",
    "sub",
    "sub_p",
]

# ---------------------------------------------------------------------------------------------
# Wrapping arithmetic: NumPy arrays wrap silently (0-d included, as ufunc calls).

add_p = binary_elementwise("add", np.add, dtypes="numeric")
sub_p = binary_elementwise("sub", np.subtract, dtypes="numeric")
mul_p = binary_elementwise("mul", np.multiply, dtypes="numeric")


def _linear_ct(operand, ct):
    """The cotangent of one operand of a linear binary op: None for a known (non-linear) operand,
    else `ct` summed down to the operand's shape (a symbolic Zero stays one)."""
    if not is_undefined_primal(operand):
        return None
    if is_zero(ct):
        return Zero(operand.aval)
    return unbroadcast(operand.aval, ct)


def _add_transpose(ct, x, y):
    return [_linear_ct(x, ct), _linear_ct(y, ct)]


def _sub_transpose(ct, x, y):
    neg_ct = ct if is_zero(ct) or not is_undefined_primal(y) else _lax().neg(ct)
    return [_linear_ct(x, ct), _linear_ct(y, neg_ct)]


# Each partial's contribution is broadcast to the output shape by `defjvp`; a Zero tangent is skipped.
defjvp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
add_p.transpose = _add_transpose
defjvp(sub_p, lambda g, ans, x, y: g, lambda g, ans, x, y: _lax().neg(g))
sub_p.transpose = _sub_transpose


def _mul_transpose(ct, x, y):
    # Bilinear: exactly one operand is linear. No conjugation (JAX's convention for complex).
    if is_undefined_primal(x) and is_undefined_primal(y):
        raise ValueError("mul: transposing with both operands linear (the product is not linear in them).")
    if is_undefined_primal(x):
        return [_linear_ct(x, ct if is_zero(ct) else mul(ct, y)), None]
    return [None, _linear_ct(y, ct if is_zero(ct) else mul(x, ct))]


defjvp(mul_p, lambda g, ans, x, y: mul(g, y), lambda g, ans, x, y: mul(x, g))
mul_p.transpose = _mul_transpose


def add(x, y):
    """Elementwise ``x + y``; operands share a dtype (Python scalars adopt the other's)."""
    return add_p.bind(*lax_binary_operands("add", x, y))


def sub(x, y):
    """Elementwise ``x - y``."""
    return sub_p.bind(*lax_binary_operands("sub", x, y))


def mul(x, y):
    """Elementwise ``x * y``."""
    return mul_p.bind(*lax_binary_operands("mul", x, y))


# ---------------------------------------------------------------------------------------------
# Division and remainder.


def _safe_divisor(x, y):
    """The divisor with the two trapping cases (y == 0 and INT_MIN / -1) replaced by 1, plus
    the masks of those cases, so NumPy never divides by zero or overflows."""
    zero = y == 0
    bad = zero
    overflow = None
    if not _dtypes.is_unsigned(y.dtype):
        overflow = (x == np.iinfo(x.dtype).min) & (y == -1)
        bad = bad | overflow
    return np.where(bad, np.ones_like(y), y), zero


def _div_impl(x, y):
    x, y = as_arrays(x, y)
    if not _dtypes.is_integer(x.dtype):
        return np.true_divide(x, y)
    ys, zero = _safe_divisor(x, y)
    q = np.floor_divide(x, ys)
    if not _dtypes.is_unsigned(x.dtype):
        # Floor to truncation: step toward zero when the signs differ and the division is inexact.
        inexact = (np.remainder(x, ys) != 0) & ((x < 0) != (ys < 0))
        q = np.where(inexact, np.add(q, np.ones_like(q)), q)
    # x / 0 is all bits set: -1 signed, the maximum unsigned. INT_MIN / -1 already gave INT_MIN.
    all_ones = (
        np.full_like(q, -1) if not _dtypes.is_unsigned(x.dtype) else np.full_like(q, np.iinfo(x.dtype).max)
    )
    return np.where(zero, all_ones, q)


def _rem_impl(x, y):
    x, y = as_arrays(x, y)
    if not _dtypes.is_integer(x.dtype):
        return np.fmod(x, y)  # C fmod: the sign of the dividend
    ys, zero = _safe_divisor(x, y)
    # fmod on integers is the truncated remainder; INT_MIN % 1 gives the 0 XLA gives for % -1.
    r = np.fmod(x, ys)
    return np.where(zero, x, r)


div_p = binary_elementwise("div", _div_impl, dtypes="numeric")
rem_p = binary_elementwise("rem", _rem_impl, dtypes="real_numeric")


def _div_transpose(ct, x, y):
    # Linear in the numerator only.
    if is_undefined_primal(y):
        raise ValueError("div: transposing with respect to the divisor (x / y is not linear in y).")
    return [_linear_ct(x, ct if is_zero(ct) else div(ct, y)), None]


def _rem_y_partial(g, ans, x, y):
    # rem(x, y) = x - y * trunc(x / y), and trunc(x / y) is locally constant.
    L = _lax()
    q = div(x, y)
    return mul(L.neg(g), mul(L.sign(q), L.floor(L.abs(q))))


defjvp(
    div_p,
    lambda g, ans, x, y: div(g, y),
    lambda g, ans, x, y: mul(mul(_lax().neg(g), x), _lax().integer_pow(y, -2)),
)
div_p.transpose = _div_transpose
defjvp(rem_p, lambda g, ans, x, y: g, _rem_y_partial)


def div(x, y):
    """Elementwise ``x / y``; integers truncate toward zero, and ``x / 0`` gives -1 (all bits set)."""
    return div_p.bind(*lax_binary_operands("div", x, y))


def rem(x, y):
    """Elementwise remainder with the sign of ``x`` (C fmod); ``x % 0`` gives x for integers."""
    return rem_p.bind(*lax_binary_operands("rem", x, y))


# ---------------------------------------------------------------------------------------------
# Powers.


def _pow_abstract_eval(x, y):
    check_class("pow", x.dtype, "inexact", "x (the base)")
    check_class("pow", y.dtype, "numeric", "y (the exponent)")
    if not (_dtypes.is_integer(y.dtype) or y.dtype == x.dtype):
        raise TypeError(
            "the first argument to pow must have an inexact dtype (float or complex), and the second "
            "argument must have an inexact or integer dtype, and two inexact dtypes must match, but got "
            f"{x.dtype.name} and {y.dtype.name} respectively."
        )
    return ShapedArray(broadcasting_shape("pow", x, y), x.dtype, x.weak_type and y.weak_type)


def _pow_impl(x, y):
    x, y = as_arrays(x, y)
    # XLA converts an integer exponent to the base's dtype, then takes pow in that dtype.
    return np.power(x, y.astype(x.dtype))


def _pow_int_exponent_cases(rng):
    out = []
    for dt in ("float32", "bfloat16", "complex64"):
        for sx, sy in BINARY_SHAPES:
            x = random_array(rng, sx, dt)
            y = random_array(rng, sy, "int32", (-4, 4))
            out.append(Case((x, y), {}, f"{dt}{list(sx)}-int32{list(sy)}"))
    return out


pow_p = Primitive("pow")
pow_p.impl = _pow_impl
pow_p.abstract_eval = _pow_abstract_eval
mark_elementwise(pow_p)
elementwise_batcher(pow_p)
pow_p.test_spec = TestSpec(
    cases=concat_cases(
        binary_cases("inexact", domain=(0.1, 3.0), rhs_domain=(-3.0, 3.0)),
        binary_cases("inexact", shapes=(((3,), (3,)),)),
        _pow_int_exponent_cases,
    )
)


def _pow_x_partial(g, ans, x, y):
    L = _lax()
    y_dtype = aval_of(y).dtype
    if _dtypes.is_integer(y_dtype):
        # y * x**(y - 1), exactly 0 where y == 0 (JAX selects 0 there). The exponent becomes 0
        # there instead of -1, so the unused value is never inf and cannot leak nan into
        # higher derivatives.
        y_is_0 = L.convert_element_type(L.eq(y, 0), y_dtype)
        x_pow = pow(x, add(sub(y, 1), y_is_0))
        return mul(g, mul(L.convert_element_type(y, aval_of(x).dtype), x_pow))
    return mul(g, mul(y, pow(x, sub(y, 1))))


def _pow_y_partial(g, ans, x, y):
    # log(x) * x**y, taking log(1) = 0 where x == 0 (JAX's choice: 0 ** y has no y-derivative there).
    L = _lax()
    x_safe = L.select(L.eq(x, 0), L.full_like(x, 1), x)
    return mul(g, mul(L.log(x_safe), ans))


# An integer exponent has a float0 (symbolic Zero) tangent, so its partial is never called.
defjvp(pow_p, _pow_x_partial, _pow_y_partial)


def _pow_operands(x, y):
    # A Python int exponent stays an integer (JAX keeps pow(x, 2) an int exponent); other Python
    # scalars take the array operand's dtype, and a Python base of an integer exponent array
    # becomes the default inexact dtype of its kind.
    x_scalar, y_scalar = _dtypes.is_python_scalar(x), _dtypes.is_python_scalar(y)
    if y_scalar and not x_scalar:
        if type(y) is not int:
            y = make_array(y, get_aval(x).dtype, weak_type=True)
    elif x_scalar and not y_scalar:
        y_dtype = get_aval(y).dtype
        if _dtypes.is_inexact(y_dtype):
            x = make_array(x, y_dtype, weak_type=True)
        else:
            kind = _dtypes.default_complex_dtype() if type(x) is complex else _dtypes.default_float_dtype()
            x = make_array(x, kind, weak_type=True)
    return x, y


def pow(x, y):  # noqa: A001 - JAX's name
    """Elementwise ``x ** y`` for inexact ``x``; ``y`` has x's dtype or any integer dtype."""
    return pow_p.bind(*_pow_operands(x, y))


# ---------------------------------------------------------------------------------------------
# max and min.


def _minmax(x, y, np_fn, pick_x):
    x, y = as_arrays(x, y)
    if _dtypes.is_complex(x.dtype):
        # Lexicographic on (real, imag), as JAX lowers complex max/min.
        rx, ry = x.real, y.real
        choose_x = np.where(rx == ry, pick_x(x.imag, y.imag), pick_x(rx, ry))
        return np.where(choose_x, x, y)
    out = np_fn(x, y)  # np.maximum/minimum already propagate nan
    if _dtypes.is_floating(x.dtype):
        both_zero = (x == 0) & (y == 0)
        # max(-0.0, +0.0) is +0.0 and min is -0.0 in either order; NumPy returns y on ties.
        keep_x = np.signbit(x) != (np_fn is np.maximum)
        out = np.where(both_zero, np.where(keep_x, x, y), out)
    return out


def _max_impl(x, y):
    return _minmax(x, y, np.maximum, np.greater)


def _min_impl(x, y):
    return _minmax(x, y, np.minimum, np.less)


def _complex_minmax_cases(rng):
    vals = np.array([0.0, 1.0, -1.0, np.nan], np.float32)
    re = np.array(np.meshgrid(vals, vals, vals, vals)).reshape(4, -1)
    x = (re[0] + 1j * re[1]).astype(np.complex64)
    y = (re[2] + 1j * re[3]).astype(np.complex64)
    return [Case((x, y), {}, "complex64-lexicographic")]


_ANY_DTYPES = ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "bool", "complex64")
max_p = binary_elementwise(
    "max",
    _max_impl,
    dtypes="any",
    spec=TestSpec(cases=concat_cases(binary_cases(dtype_list=_ANY_DTYPES), _complex_minmax_cases)),
)
min_p = binary_elementwise(
    "min",
    _min_impl,
    dtypes="any",
    spec=TestSpec(cases=concat_cases(binary_cases(dtype_list=_ANY_DTYPES), _complex_minmax_cases)),
)


def _balanced_share(x, ans, other):
    """1 where `x` is the result, halved where `other` ties with it: max/min split the tangent
    evenly between equal operands, as JAX does."""
    L = _lax()
    dt = aval_of(ans).dtype
    picked = L.convert_element_type(L.eq(x, ans), dt)
    tied = L.convert_element_type(L.eq(other, ans), dt)
    return div(picked, add(tied, 1))


for _p in (max_p, min_p):
    defjvp(
        _p,
        lambda g, ans, x, y: mul(g, _balanced_share(x, ans, y)),
        lambda g, ans, x, y: mul(g, _balanced_share(y, ans, x)),
    )


def max(x, y):  # noqa: A001 - JAX's name
    """Elementwise maximum; nan wins, and complex values compare lexicographically."""
    return max_p.bind(*lax_binary_operands("max", x, y))


def min(x, y):  # noqa: A001 - JAX's name
    """Elementwise minimum; nan wins, and complex values compare lexicographically."""
    return min_p.bind(*lax_binary_operands("min", x, y))


# ---------------------------------------------------------------------------------------------
# atan2, nextafter, complex.


def _atan2_impl(x, y):
    x, y = as_arrays(x, y)
    if not _dtypes.is_complex(x.dtype):
        return np.arctan2(x, y)
    # atan(x / y) on the branch of arg(y + i x), the real atan2 continued to complex operands.
    r = np.sqrt(np.add(np.multiply(x, x), np.multiply(y, y)))
    return np.multiply(np.asarray(-1j, x.dtype), np.log(np.divide(np.add(y, np.multiply(1j, x)), r))).astype(
        x.dtype
    )


atan2_p = binary_elementwise("atan2", _atan2_impl, dtypes="inexact")
nextafter_p = binary_elementwise("nextafter", np.nextafter, dtypes="float")
nextafter_p.test_spec.differentiable = False  # piecewise constant in x1 and x2
nextafter_p.test_spec.grad_order = 0
defjvp_zero(nextafter_p)


def _atan2_denominator(x, y):
    L = _lax()
    return add(L.square(x), L.square(y))


defjvp(
    atan2_p,
    lambda g, ans, x, y: mul(g, div(y, _atan2_denominator(x, y))),
    lambda g, ans, x, y: mul(g, div(_lax().neg(x), _atan2_denominator(x, y))),
)


def atan2(x, y):
    """Elementwise two-argument arc tangent of ``x / y`` (the quadrant from both signs)."""
    return atan2_p.bind(*lax_binary_operands("atan2", x, y))


def nextafter(x1, x2):
    """The next representable value after ``x1`` in the direction of ``x2``."""
    return nextafter_p.bind(*lax_binary_operands("nextafter", x1, x2))


# JAX builds complex numbers from float32 or float64 parts only.
_COMPLEX_PARTS = (lambda d: np.dtype(d) in (_dtypes.float32, _dtypes.float64), "float32 or float64")


def _complex_abstract_eval(x, y):
    check_class("complex", x.dtype, _COMPLEX_PARTS, "x")
    check_class("complex", y.dtype, _COMPLEX_PARTS, "y")
    dt = same_dtypes("complex", (x, y))
    shape = broadcasting_shape("complex", x, y)
    return ShapedArray(shape, _dtypes.to_complex_dtype(dt), x.weak_type and y.weak_type)


def _complex_impl(x, y):
    x, y = as_arrays(x, y)
    # Assign the parts: x + 1j * y would turn an infinite y into nan + inf j.
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _dtypes.to_complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return out


complex_p = Primitive("complex")
complex_p.impl = _complex_impl
complex_p.abstract_eval = _complex_abstract_eval
mark_elementwise(complex_p)
elementwise_batcher(complex_p)
complex_p.test_spec = TestSpec(cases=binary_cases(dtype_list=("float32",)))


def _complex_transpose(ct, x, y):
    # <ct, tx + i ty> = real(ct) tx - imag(ct) ty under the plain (non-conjugating) pairing.
    L = _lax()
    dense = not is_zero(ct)
    return [
        _linear_ct(x, L.real(ct) if dense else ct),
        _linear_ct(y, L.neg(L.imag(ct)) if dense else ct),
    ]


deflinear(complex_p, _complex_transpose)


def complex(x, y):  # noqa: A001 - JAX's name
    """Elementwise ``x + i y`` from float32 (float64) parts, giving complex64 (complex128)."""
    return complex_p.bind(*lax_binary_operands("complex", x, y))


# ------------------------------------------------------------------------------------------------
# mulhi: the high half of the double-width integer product.

_LO32 = np.uint64(0xFFFFFFFF)


def _mulhi_u64(a, b):
    # Schoolbook product on 32-bit halves: no partial product or carry sum exceeds 64 bits.
    s32 = np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & _LO32, a >> s32, b & _LO32, b >> s32
    lo_hi, hi_lo = a_lo * b_hi, a_hi * b_lo
    cross = ((a_lo * b_lo) >> s32) + (lo_hi & _LO32) + (hi_lo & _LO32)
    return a_hi * b_hi + (lo_hi >> s32) + (hi_lo >> s32) + (cross >> s32)


def _mulhi_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dt = x.dtype
    bits = dt.itemsize * 8
    signed = not _dtypes.is_unsigned(dt)
    with np.errstate(over="ignore"):
        if bits < 64:
            wide = np.int64 if signed else np.uint64
            return np.asarray((x.astype(wide) * y.astype(wide)) >> wide(bits)).astype(dt)
        xu, yu = np.broadcast_arrays(x.view(np.uint64), y.view(np.uint64))
        hi = _mulhi_u64(xu, yu)
        if signed:
            # Two's complement: hi(x*y) = hi_unsigned - (x<0 ? y : 0) - (y<0 ? x : 0), mod 2^64.
            zero = np.uint64(0)
            hi = hi - np.where(x < 0, yu, zero) - np.where(y < 0, xu, zero)
        return np.asarray(hi).view(dt)


mulhi_p = binary_elementwise(
    "mulhi", _mulhi_impl, dtypes="integer", spec=TestSpec(cases=binary_cases("integer"), differentiable=False)
)
defjvp_zero(mulhi_p)


def mulhi(x, y, /):
    """Elementwise multiply-high: the upper N bits of the 2N-bit product of N-bit integers."""
    from morphax._src.prims._operands import lax_binary_operands

    return mulhi_p.bind(*lax_binary_operands("mulhi", x, y))
