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

import builtins
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import structural
from morphax._src.core.ad_util import Zero, aval_of, is_undefined_primal, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims import _stablehlo_bits as hlo_bits
from morphax._src.prims._ad import defjvp, defjvp_zero, linear_operand_ct
from morphax._src.prims._exact_float import two_product
from morphax._src.prims._operands import lax_binary_operands, lax_nary_operands
from morphax._src.prims._spec import (
    Case,
    TestSpec,
    binary_cases,
    random_array,
    unary_cases,
)
from morphax._src.prims.builders import (
    as_arrays,
    binary_elementwise,
    broadcasting_shape,
    check_dtype,
    concat_cases,
    elementwise_primitive,
    elementwise_unop,
    same_dtypes,
)
from morphax._src.prims.compare import eq, ge
from morphax._src.prims.complex_parts import _complex_special_cases, conj, real
from morphax._src.prims.complex_parts import complex as complex_
from morphax._src.prims.conversion import _convert_element_type, full_like
from morphax._src.prims.selection import select
from morphax._src.prims.unary import _int_edge_cases, floor, neg, sign

__all__ = [
    "add_p",
    "sub_p",
    "mul_p",
    "add",
    "sub",
    "mul",
    "div_p",
    "rem_p",
    "div",
    "rem",
    "max_p",
    "min_p",
    "max",
    "min",
    "atan2_p",
    "nextafter_p",
    "atan2",
    "nextafter",
    "mulhi_p",
    "mulhi",
    "abs_p",
    "abs",
    "integer_pow_p",
    "integer_pow",
    "reciprocal",
    "square_p",
    "square",
]


add_p = binary_elementwise("add", np.add, dtypes="numeric", declared=structural.add_p)
add_p.stablehlo = hlo.elementwise("stablehlo.add")
sub_p = binary_elementwise("sub", np.subtract, dtypes="numeric")
sub_p.stablehlo = hlo.elementwise("stablehlo.subtract")
mul_p = binary_elementwise("mul", np.multiply, dtypes="numeric")
mul_p.stablehlo = hlo.elementwise("stablehlo.multiply")


def _add_transpose(ct, x, y):
    return [linear_operand_ct(x, ct), linear_operand_ct(y, ct)]


def _sub_transpose(ct, x, y):
    neg_ct = ct if is_zero(ct) or not is_undefined_primal(y) else neg(ct)
    return [linear_operand_ct(x, ct), linear_operand_ct(y, neg_ct)]


# Each partial's contribution is broadcast to the output shape by `defjvp`; a Zero tangent is skipped.
defjvp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
add_p.transpose = _add_transpose
defjvp(sub_p, lambda g, ans, x, y: g, lambda g, ans, x, y: neg(g))
sub_p.transpose = _sub_transpose


def _mul_transpose(ct, x, y):
    # Bilinear: exactly one operand is linear. No conjugation (JAX's convention for complex).
    if is_undefined_primal(x) and is_undefined_primal(y):
        raise ValueError("mul: transposing with both operands linear (the product is not linear in them).")
    if is_undefined_primal(x):
        return [linear_operand_ct(x, ct if is_zero(ct) else mul(ct, y)), None]
    return [None, linear_operand_ct(y, ct if is_zero(ct) else mul(x, ct))]


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
div_p.stablehlo = hlo.elementwise("stablehlo.divide")
rem_p = binary_elementwise("rem", _rem_impl, dtypes="real_numeric")
rem_p.stablehlo = hlo.elementwise("stablehlo.remainder")


def _div_transpose(ct, x, y):
    # Linear in the numerator only.
    if is_undefined_primal(y):
        raise ValueError("div: transposing with respect to the divisor (x / y is not linear in y).")
    return [linear_operand_ct(x, ct if is_zero(ct) else div(ct, y)), None]


def _rem_y_partial(g, ans, x, y):
    # rem(x, y) = x - y * trunc(x / y), and trunc(x / y) is locally constant.
    q = div(x, y)
    return mul(neg(g), mul(sign(q), floor(abs(q))))


defjvp(
    div_p,
    lambda g, ans, x, y: div(g, y),
    lambda g, ans, x, y: mul(mul(neg(g), x), integer_pow(y, -2)),
)


div_p.transpose = _div_transpose
defjvp(rem_p, lambda g, ans, x, y: g, _rem_y_partial)


def div(x, y):
    """Elementwise ``x / y``; integers truncate toward zero, and ``x / 0`` gives -1 (all bits set)."""
    return div_p.bind(*lax_binary_operands("div", x, y))


def rem(x, y):
    """Elementwise remainder with the sign of ``x`` (C fmod); ``x % 0`` gives x for integers."""
    return rem_p.bind(*lax_binary_operands("rem", x, y))


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
max_p.stablehlo = hlo.extremum("stablehlo.maximum", "GT")


min_p = binary_elementwise(
    "min",
    _min_impl,
    dtypes="any",
    spec=TestSpec(cases=concat_cases(binary_cases(dtype_list=_ANY_DTYPES), _complex_minmax_cases)),
)
min_p.stablehlo = hlo.extremum("stablehlo.minimum", "LT")


def _balanced_share(x, ans, other):
    """1 where `x` is the result, halved where `other` ties with it: max/min split the tangent
    evenly between equal operands, as JAX does."""
    aval = aval_of(ans)
    # In ans's weak type, as JAX's (full_like of ans): a weak gradient stays weak.
    picked = _convert_element_type(eq(x, ans), aval.dtype, aval.weak_type)
    tied = _convert_element_type(eq(other, ans), aval.dtype, aval.weak_type)
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
atan2_p.stablehlo = hlo.elementwise("stablehlo.atan2")
nextafter_p = binary_elementwise("nextafter", np.nextafter, dtypes="float")
nextafter_p.stablehlo = hlo.elementwise("chlo.next_after")
nextafter_p.test_spec.differentiable = False  # piecewise constant in x1 and x2
nextafter_p.test_spec.grad_order = 0
defjvp_zero(nextafter_p)


def _atan2_denominator(x, y):
    return add(square(x), square(y))


defjvp(
    atan2_p,
    lambda g, ans, x, y: mul(g, div(y, _atan2_denominator(x, y))),
    lambda g, ans, x, y: mul(g, div(neg(x), _atan2_denominator(x, y))),
)


def atan2(x, y):
    """Elementwise two-argument arc tangent of ``x / y`` (the quadrant from both signs)."""
    return atan2_p.bind(*lax_binary_operands("atan2", x, y))


def nextafter(x1, x2):
    """The next representable value after ``x1`` in the direction of ``x2``."""
    return nextafter_p.bind(*lax_binary_operands("nextafter", x1, x2))


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
mulhi_p.stablehlo = hlo_bits.mulhi


defjvp_zero(mulhi_p)


def mulhi(x, y, /):
    """Elementwise multiply-high: the upper N bits of the 2N-bit product of N-bit integers."""
    from morphax._src.prims._operands import lax_binary_operands

    return mulhi_p.bind(*lax_binary_operands("mulhi", x, y))


def _abs_impl(x):
    # On arrays NumPy wraps abs(INT_MIN) to INT_MIN, as XLA does.
    return np.abs(x)


abs_p = elementwise_unop(
    "abs",
    _abs_impl,
    "signed",
    out_dtype=_dtypes.real_dtype,
    spec=TestSpec(
        cases=unary_cases(
            "signed", dtype_list=("float32", "float16", "bfloat16", "int32", "int8", "complex64")
        )
    ),
)
abs_p.stablehlo = hlo.elementwise("stablehlo.abs")


def _abs_partial(g, ans, x):
    if not _dtypes.is_complex(aval_of(x).dtype):
        # Slope +1 at 0 (and -0.0), as JAX: select(x >= 0, g, -g).
        return select(ge(x, 0), g, neg(g))
    # d|x| = real(conj(x) dx) / |x|; at x == 0 the divisor becomes 1 (conj(x) is 0 there), giving 0.
    safe = select(eq(ans, 0), full_like(ans, 1), ans)
    return real(mul(g, div(conj(x), complex_(safe, 0.0))))


defjvp(abs_p, _abs_partial)  # integer abs has float0 tangents: no partial needed


def abs(x):  # noqa: A001 - JAX's name
    """Elementwise ``|x|``; complex inputs give the real magnitude, ``abs(INT_MIN)`` wraps."""
    return abs_p.bind(x)


def _integer_pow_check(x, *, y):
    if not isinstance(y, int) or isinstance(y, bool):
        raise TypeError(
            f"integer_pow: the exponent y must be a Python int, got {y!r} of type {type(y).__name__}."
        )
    if y < 0 and _dtypes.is_integer(x.dtype):
        raise TypeError(
            f"Integers cannot be raised to negative powers, got integer_pow({x.str_short()}, {y}). "
            "Convert x to a floating dtype first."
        )


def _integer_pow_stablehlo(ctx, x, *, y):
    # Square-and-multiply, as the reference and XLA's own lowering compute it.
    if y == 0:
        return [ctx.constant(1, x.dtype, x.shape)]
    n, acc, base = builtins.abs(y), None, x
    while n:
        if n & 1:
            acc = base if acc is None else ctx.op1("stablehlo.multiply", [acc, base], acc)
        n >>= 1
        if n:
            base = ctx.op1("stablehlo.multiply", [base, base], base)
    if y < 0:
        acc = ctx.op1("stablehlo.divide", [ctx.constant(1, x.dtype, x.shape), acc], acc)
    return [acc]


def _integer_pow_impl(x, *, y):
    (x,) = as_arrays(x)
    if y == 0:
        return np.ones_like(x)
    # Square-and-multiply in the operand's own dtype, as XLA lowers it: integers wrap, and
    # bfloat16/float16 round after every product.
    n = builtins.abs(y)
    acc = None
    base = x
    while n:
        if n & 1:
            acc = base if acc is None else np.multiply(acc, base)
        n >>= 1
        if n:
            base = np.multiply(base, base)
    acc = np.asarray(acc, x.dtype)
    return np.divide(np.ones_like(acc), acc) if y < 0 else acc


integer_pow_p = elementwise_unop(
    "integer_pow",
    _integer_pow_impl,
    "numeric",
    check=_integer_pow_check,
    spec=TestSpec(
        cases=concat_cases(
            unary_cases(
                dtype_list=("float32", "float16", "bfloat16", "complex64"),
                params=[{"y": y} for y in (0, 1, 2, 3, -2)],
            ),
            unary_cases(dtype_list=("int32", "uint8", "int8"), params=[{"y": y} for y in (0, 1, 2, 3)]),
            unary_cases(dtype_list=("float32",), params=[{"y": 7}, {"y": -5}]),
        )
    ),
)
integer_pow_p.stablehlo = _integer_pow_stablehlo
# x ** 1 is x bit for bit (autodiff leaves these behind): forwarding reads x instead.
integer_pow_p.is_identity = lambda aval, *, y: y == 1 and type(y) is int


def _integer_pow_partial(g, ans, x, *, y):
    if y == 0:
        return Zero(tangent_aval(aval_of(ans)))
    # y = 1 and 2 without an x ** 1 / x ** 0 equation, as JAX (the same jaxpr when printed).
    if y == 1:
        return g
    return mul(g, mul(y, x if y == 2 else integer_pow(x, y - 1)))


defjvp(integer_pow_p, _integer_pow_partial)


def integer_pow(x, y):
    """Elementwise ``x ** y`` for a static Python int ``y`` (negative only for inexact ``x``)."""
    try:
        y = operator.index(y)
    except TypeError:
        raise TypeError(
            f"integer_pow: the exponent y must be an int, got {y!r} of type {type(y).__name__}."
        ) from None
    return integer_pow_p.bind(x, y=y)


def reciprocal(x):
    """Elementwise ``1 / x``; like JAX, this is ``integer_pow(x, -1)``."""
    return integer_pow(x, -1)


def _square_impl(x):
    (x,) = as_arrays(x)
    if not _dtypes.is_complex(x.dtype):
        return np.multiply(x, x)
    # JAX's complex square: (a - b)(a + b) avoids overflowing a*a - b*b for large parts, and the
    # real part is exactly 0 when |a| == |b| (where (a-b)(a+b) could give inf * 0 = nan).
    a, b = x.real, x.imag
    zero_re = np.isfinite(a) & ((a == b) | (a == -b))
    re = np.where(zero_re, 0, np.multiply(np.subtract(a, b), np.add(a, b)))
    im = np.multiply(np.multiply(a, b), 2)
    out = np.empty(x.shape, x.dtype)
    out.real, out.imag = re, im
    return out


square_p = elementwise_unop(
    "square",
    _square_impl,
    "numeric",
    spec=TestSpec(
        cases=concat_cases(
            unary_cases(dtype_list=("float32", "bfloat16", "int32", "uint8", "int8", "complex64")),
            _complex_special_cases,
            _int_edge_cases(("int32", "int8", "uint8"), "edges"),
        )
    ),
)
square_p.stablehlo = lambda ctx, x: [ctx.op1("stablehlo.multiply", [x, x], x)]


def square(x):
    """Elementwise ``x * x``."""
    return square_p.bind(x)


defjvp(square_p, lambda g, ans, x: mul(g, mul(2, x)))


# ------------------------------------------------------------------------------------------------
# fma: a * b + c with one rounding. XLA's CPU compiler contracts a multiply feeding an add into
# one (so `jax.random.uniform(key, minval=a, maxval=b)` is fma(u, b - a, a) on CPU); samplers bind
# it where JAX's numbers depend on that. Not a jax.lax name.


def _round_to_odd_sum(x, y):
    """x + y in float64 rounded to odd (inexact results get an odd last bit): rounding that once
    more to a narrower format gives the correctly rounded exact sum (Boldo and Melquiond)."""
    s = x + y
    v = s - x
    err = (x - (s - v)) + (y - v)  # exact: x + y == s + err (TwoSum)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    nudge = np.isfinite(s) & (err != 0) & even
    return np.where(nudge, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _fma_impl(a, b, c):
    a, b, c = np.broadcast_arrays(*as_arrays(a, b, c))
    out = _fma_finite_aware(a, b, c)
    # A NaN addend comes through unchanged when the product is not itself a NaN operand (as the
    # hardware instruction and C's fma return it), even where the product is invalid (0 * inf).
    keep_c = np.isnan(c) & ~np.isnan(a) & ~np.isnan(b)
    return np.where(keep_c, c, out).astype(a.dtype)


def _fma_finite_aware(a, b, c):
    dt = a.dtype
    a64, b64, c64 = (np.asarray(x, np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        if dt.itemsize < 8:
            # float64 holds the product of two narrower significands exactly; the sum is rounded
            # to odd, then to the format once.
            out = _round_to_odd_sum(a64 * b64, c64)
            return np.asarray(out.astype(dt))
        # float64: the product split exactly in two, summed with c exactly, the low parts rounded
        # to odd, then the final sum rounded once (Boldo and Melquiond's emulated FMA).
        p, e = two_product(a64, b64)
        hi = p + c64
        v = hi - p
        lo = (p - (hi - v)) + (c64 - v)
        out = hi + _round_to_odd_sum(lo, e)
        plain = a64 * b64 + c64
        # An exact zero takes its sign from IEEE's rules for p + c, which the plain sum follows
        # whenever the product is exact (the split's +0 low parts would lose a -0).
        out = np.where((out == 0) & (lo == 0) & (e == 0), plain, out)
        # Non-finite products and sums follow IEEE's fma, which the plain expression gives.
        return np.where(np.isfinite(out) & np.isfinite(p) & np.isfinite(hi), out, plain).astype(dt)


def _fma_abstract_eval(a, b, c):
    dt = same_dtypes("fma", (a, b, c))
    check_dtype("fma", dt, "float")
    return ShapedArray(broadcasting_shape("fma", a, b, c), dt, a.weak_type and b.weak_type and c.weak_type)


def _fma_cases(rng):
    out = []
    for dt in ("float32", "float16", "bfloat16"):
        for sa, sb, sc in (((3, 4), (3, 4), (3, 4)), ((), (2, 3), (2, 3)), ((1, 3), (2, 1), ())):
            args = tuple(random_array(rng, s, dt) for s in (sa, sb, sc))
            out.append(Case(args, {}, f"{dt}{list(sa)}{list(sb)}{list(sc)}"))
    # Operands where one rounding and two differ: u * d + a with u on the float32 grid of [0, 1).
    u = (np.arange(1, 64, dtype=np.float32) * np.float32(2.0**-23 * 131071)) % np.float32(1)
    d = np.full_like(u, np.float32(1.9089994))
    a = np.full_like(u, np.float32(-0.95449972))
    out.append(Case((u, d, a), {}, "float32-one-rounding"))
    vals = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3e38], np.float32)
    x, y, z = (m.ravel() for m in np.meshgrid(vals, vals, vals, indexing="ij"))
    out.append(Case((x, y, z), {}, "float32-specials"))
    return out


fma_p = elementwise_primitive("fma", _fma_impl, _fma_abstract_eval, TestSpec(cases=_fma_cases))
fma_p.stablehlo = hlo_bits.fma
defjvp(
    fma_p,
    lambda g, ans, a, b, c: mul(g, b),
    lambda g, ans, a, b, c: mul(a, g),
    lambda g, ans, a, b, c: g,
)


def fma(a, b, c):
    """``a * b + c`` rounded once (operands of one floating dtype, lax broadcasting)."""
    return fma_p.bind(*lax_nary_operands("fma", a, b, c))
