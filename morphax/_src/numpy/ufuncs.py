"""Elementwise `morphax.numpy` functions: promotion at the top, then primitives.

Each function checks its arguments, applies JAX's dtype promotion (integers become floats for
transcendental functions) and NumPy rank promotion, and binds primitives. No rules live here.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import util
from morphax._src.prims import lax_api as L
from morphax._src.runtime import ready_ops
from morphax._src.runtime.array import Array
from morphax._src.transforms.custom import custom_jvp

# NumPy dtype kinds that are already inexact (float, complex); bfloat16 and float8 report 'V'
# and take the general path.
_INEXACT_KINDS = ("f", "c")


# The public names `morphax.numpy` re-exports.
__all__ = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "exp", "exp2", "log", "log1p", "expm1", "sqrt", "cbrt", "asin", "acos", "atan",
    "asinh", "acosh", "atanh", "log2", "log10", "floor", "ceil", "trunc", "fix", "rint", "negative",
    "positive", "absolute", "abs", "sign", "square", "reciprocal", "conjugate", "conj", "real",
    "imag", "isfinite", "isnan", "isinf", "isposinf", "isneginf", "signbit", "logical_not",
    "bitwise_not", "invert", "bitwise_invert", "bitwise_count", "subtract", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and",
    "bitwise_or", "bitwise_xor", "arctan2", "atan2", "nextafter", "multiply", "add", "true_divide",
    "divide", "floor_divide", "remainder", "mod", "divmod", "fmod", "power", "pow", "float_power",
    "fmax", "fmin", "hypot", "copysign", "logaddexp", "logaddexp2", "left_shift", "right_shift",
    "bitwise_left_shift", "bitwise_right_shift", "logical_and", "logical_or", "logical_xor",
    "heaviside", "clip",
]  # fmt: skip


def _dtype_of(x):
    # Arrays and tracers carry .dtype; Python scalars are promoted before this is called.
    return x.dtype


# ------------------------------------------------------------------------------- unary factories


def _unary_inexact(name, prim_name):
    # Bound without optional params: bind fills in `accuracy=None` (the primitive's param_defaults).
    prim = getattr(L, f"{prim_name}_p")

    def fn(x, /):
        if type(x) is not Array or x.dtype.kind not in _INEXACT_KINDS:
            util.check_arraylike(name, x)
            (x,) = util.promote_dtypes_inexact(x)
        return prim.bind(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, computed in the input's inexact dtype (integers promote to float)."
    if prim.ready_impl is not None:  # a ready float or complex Array: runtime/ready_ops.py
        return ready_ops.unary(prim.ready_impl, "fc", fn)
    return fn


sin = _unary_inexact("sin", "sin")
cos = _unary_inexact("cos", "cos")
tan = _unary_inexact("tan", "tan")
arcsin = _unary_inexact("arcsin", "asin")
arccos = _unary_inexact("arccos", "acos")
arctan = _unary_inexact("arctan", "atan")
sinh = _unary_inexact("sinh", "sinh")
cosh = _unary_inexact("cosh", "cosh")
tanh = _unary_inexact("tanh", "tanh")
arcsinh = _unary_inexact("arcsinh", "asinh")
arccosh = _unary_inexact("arccosh", "acosh")
arctanh = _unary_inexact("arctanh", "atanh")
exp = _unary_inexact("exp", "exp")
exp2 = _unary_inexact("exp2", "exp2")
log = _unary_inexact("log", "log")
log1p = _unary_inexact("log1p", "log1p")
expm1 = _unary_inexact("expm1", "expm1")
sqrt = _unary_inexact("sqrt", "sqrt")
cbrt = _unary_inexact("cbrt", "cbrt")
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def log2(x, /):
    util.check_arraylike("log2", x)
    (x,) = util.promote_dtypes_inexact(x)
    return L.div_p.bind(L.log(x), util.convert_element_type(np.log(2.0), _dtype_of(x), False))


def log10(x, /):
    util.check_arraylike("log10", x)
    (x,) = util.promote_dtypes_inexact(x)
    return L.div_p.bind(L.log(x), util.convert_element_type(np.log(10.0), _dtype_of(x), False))


def _unary_keep_int(name, prim_name):
    """floor/ceil/trunc-like: integers and bools come back unchanged, as in JAX."""

    def fn(x, /):
        util.check_arraylike(name, x)
        x = util.asarray_like(x)
        if not _dtypes.is_inexact(_dtype_of(x)):
            return x
        if _dtypes.is_complex(_dtype_of(x)):
            raise TypeError(f"{name} does not support complex input (dtype {_dtype_of(x).name})")
        return getattr(L, prim_name).bind(x)

    fn.__name__ = fn.__qualname__ = name
    return fn


floor = _unary_keep_int("floor", "floor_p")
ceil = _unary_keep_int("ceil", "ceil_p")


def trunc(x, /):
    util.check_arraylike("trunc", x)
    x = util.asarray_like(x)
    if not _dtypes.is_inexact(_dtype_of(x)):
        return x
    return where(L.lt_p.bind(x, util.convert_element_type(0, _dtype_of(x))), ceil(x), floor(x))


fix = trunc


def rint(x, /):
    util.check_arraylike("rint", x)
    x = util.asarray_like(x)
    if not _dtypes.is_inexact(_dtype_of(x)):
        return (
            util.convert_element_type(x, _dtypes.default_float_dtype())
            if _dtypes.is_bool(_dtype_of(x))
            else x
        )
    return L.round_p.bind(x, rounding_method=L.RoundingMethod.TO_NEAREST_EVEN)


def negative(x, /):
    util.check_arraylike("negative", x)
    x = util.asarray_like(x)
    if _dtypes.is_bool(_dtype_of(x)):
        raise TypeError("negative does not accept dtype bool; use logical_not (~) instead.")
    return L.neg_p.bind(x)


def positive(x, /):
    util.check_arraylike("positive", x)
    return util.asarray_like(x)


def absolute(x, /):
    util.check_arraylike("absolute", x)
    x = util.asarray_like(x)
    dt = _dtype_of(x)
    if _dtypes.is_unsigned(dt) or _dtypes.is_bool(dt):
        return x
    return L.abs_p.bind(x)


abs = absolute


def sign(x, /):
    util.check_arraylike("sign", x)
    x = util.asarray_like(x)
    if _dtypes.is_bool(_dtype_of(x)):
        return x
    return L.sign_p.bind(x)


def square(x, /):
    util.check_arraylike("square", x)
    (x,) = util.promote_dtypes_numeric(x)
    return L.integer_pow_p.bind(x, y=2)


def reciprocal(x, /):
    util.check_arraylike("reciprocal", x)
    (x,) = util.promote_dtypes_inexact(x)
    return L.integer_pow_p.bind(x, y=-1)


def conjugate(x, /):
    util.check_arraylike("conjugate", x)
    x = util.asarray_like(x)
    if not _dtypes.is_complex(_dtype_of(x)):
        return x
    return L.conj_p.bind(x, input_dtype=_dtype_of(x))


conj = conjugate


def real(x, /):
    util.check_arraylike("real", x)
    x = util.asarray_like(x)
    return L.real_p.bind(x) if _dtypes.is_complex(_dtype_of(x)) else x


def imag(x, /):
    util.check_arraylike("imag", x)
    x = util.asarray_like(x)
    if _dtypes.is_complex(_dtype_of(x)):
        return L.imag_p.bind(x)
    return L.mul_p.bind(x, util.convert_element_type(0, _dtype_of(x), get_aval(x).weak_type))


def isfinite(x, /):
    util.check_arraylike("isfinite", x)
    x = util.asarray_like(x)
    dt = _dtype_of(x)
    if _dtypes.is_floating(dt):
        return L.is_finite_p.bind(x)
    if _dtypes.is_complex(dt):
        return logical_and(isfinite(real(x)), isfinite(imag(x)))
    return _full_bool(x, True)


def isnan(x, /):
    util.check_arraylike("isnan", x)
    x = util.asarray_like(x)
    dt = _dtype_of(x)
    if _dtypes.is_inexact(dt):
        return L.ne_p.bind(x, x)
    return _full_bool(x, False)


def isinf(x, /):
    util.check_arraylike("isinf", x)
    x = util.asarray_like(x)
    dt = _dtype_of(x)
    if _dtypes.is_floating(dt):
        return L.eq_p.bind(L.abs_p.bind(x), util.convert_element_type(np.inf, dt))
    if _dtypes.is_complex(dt):
        return logical_or(isinf(real(x)), isinf(imag(x)))
    return _full_bool(x, False)


def isposinf(x, /):
    return logical_and(isinf(x), greater(x, 0))


def isneginf(x, /):
    return logical_and(isinf(x), less(x, 0))


def signbit(x, /):
    util.check_arraylike("signbit", x)
    x = util.asarray_like(x)
    dt = _dtype_of(x)
    if _dtypes.is_integer(dt):
        return less(x, 0)
    if _dtypes.is_bool(dt):
        return _full_bool(x, False)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
    as_int = L.bitcast_convert_type_p.bind(x, new_dtype=np.dtype(bits))
    return L.lt_p.bind(as_int, util.convert_element_type(0, np.dtype(bits)))


def _full_bool(x, value):
    shape = get_aval(x).shape
    return L.broadcast_in_dim(_bool_const(value), shape, ())


def _bool_const(value):
    return util.convert_element_type(bool(value), np.dtype(np.bool_))


def logical_not(x, /):
    util.check_arraylike("logical_not", x)
    x = util.asarray_like(x)
    if not _dtypes.is_bool(_dtype_of(x)):
        x = not_equal(x, 0)
    return L.not_p.bind(x)


def bitwise_not(x, /):
    util.check_arraylike("bitwise_not", x)
    x = util.asarray_like(x)
    dt = _dtype_of(x)
    if not (_dtypes.is_integer(dt) or _dtypes.is_bool(dt)):
        raise TypeError(f"bitwise_not requires integer or bool input, got {dt.name}")
    return L.not_p.bind(x)


invert = bitwise_invert = bitwise_not


def bitwise_count(x, /):
    util.check_arraylike("bitwise_count", x)
    x = util.asarray_like(x)
    # NumPy and JAX count the bits of |x| and return uint8 (a count fits any integer width).
    return L.convert_element_type(L.population_count_p.bind(abs(x)), np.uint8)


# ------------------------------------------------------------------------------ binary factories


def _binary(name, prim_name, promote=util.promote_args, accept=None):
    def fn(x1, x2, /):
        x, y = promote(name, x1, x2)
        if accept is not None:
            accept(name, _dtype_of(x))
        return getattr(L, prim_name).bind(x, y)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with NumPy broadcasting and JAX dtype promotion."
    return fn


def _no_bool(name, dt):
    if _dtypes.is_bool(dt):
        raise TypeError(f"{name} does not accept bool operands; convert them to an integer dtype first.")


def _int_or_bool(name, dt):
    if not (_dtypes.is_integer(dt) or _dtypes.is_bool(dt)):
        raise TypeError(f"{name} is only defined for integer and bool dtypes, got {dt.name}")


subtract = _binary("subtract", "sub_p", accept=_no_bool)
maximum = _binary("maximum", "max_p")
minimum = _binary("minimum", "min_p")
equal = _binary("equal", "eq_p")
not_equal = _binary("not_equal", "ne_p")


def _ordering(name, prim_name):
    """An order comparison. Complex operands compare lexicographically (real parts, then
    imaginary parts where the real parts are equal), as JAX's jnp comparisons and its complex
    max/min/sort do; lax's comparison primitives themselves take no complex operands."""

    def fn(x1, x2, /):
        x, y = util.promote_args(name, x1, x2)
        prim = getattr(L, prim_name)
        if not _dtypes.is_complex(_dtype_of(x)):
            return prim.bind(x, y)
        xr, yr = real(x), real(y)
        return L.select_n_p.bind(L.eq_p.bind(xr, yr), prim.bind(xr, yr), prim.bind(imag(x), imag(y)))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with NumPy broadcasting and JAX dtype promotion."
    return fn


less = _ordering("less", "lt_p")
less_equal = _ordering("less_equal", "le_p")
greater = _ordering("greater", "gt_p")
greater_equal = _ordering("greater_equal", "ge_p")
bitwise_and = _binary("bitwise_and", "and_p", accept=_int_or_bool)
bitwise_or = _binary("bitwise_or", "or_p", accept=_int_or_bool)
bitwise_xor = _binary("bitwise_xor", "xor_p", accept=_int_or_bool)
arctan2 = _binary("arctan2", "atan2_p", promote=util.promote_args_inexact)
atan2 = arctan2
nextafter = _binary("nextafter", "nextafter_p", promote=util.promote_args_inexact)


def multiply(x1, x2, /):
    x, y = util.promote_args("multiply", x1, x2)
    if _dtypes.is_bool(_dtype_of(x)):
        return L.and_p.bind(x, y)
    return L.mul_p.bind(x, y)


def add(x1, x2, /):
    """Elementwise addition; for bools it is logical or, as in NumPy."""
    x, y = util.promote_args("add", x1, x2)
    if _dtypes.is_bool(_dtype_of(x)):
        return L.or_p.bind(x, y)
    return L.add_p.bind(x, y)


def true_divide(x1, x2, /):
    x, y = util.promote_args_inexact("true_divide", x1, x2)
    return L.div_p.bind(x, y)


divide = true_divide


def _sign_differs(a, b):
    zero = util.convert_element_type(0, _dtype_of(a))
    return L.ne_p.bind(L.lt_p.bind(a, zero), L.lt_p.bind(b, zero))


def floor_divide(x1, x2, /):
    x, y = util.promote_args_numeric("floor_divide", x1, x2)
    dt = _dtype_of(x)
    if _dtypes.is_integer(dt):
        q = L.div_p.bind(x, y)
        if _dtypes.is_unsigned(dt):
            return q
        r = L.rem_p.bind(x, y)
        zero = util.convert_element_type(0, dt)
        # JAX compares sign(r) with sign(y); that differs from the `< 0` test only for y == 0, where
        # lax.div gives -1 and lax.rem gives x, so JAX's x // 0 is -2 for x != 0 (and -1 for 0).
        differs = L.or_p.bind(_sign_differs(r, y), L.eq_p.bind(y, zero))
        adjust = L.and_p.bind(L.ne_p.bind(r, zero), differs)
        return L.select_n_p.bind(adjust, q, L.sub_p.bind(q, util.convert_element_type(1, dt)))
    if _dtypes.is_complex(dt):
        raise TypeError("floor_divide does not support complex operands")
    return _float_divmod(x, y)[0]


def _float_divmod(x, y):
    # NumPy's npy_divmod: fmod-based, so floor_divide(1, 0.1) == 9 as in NumPy and JAX.
    dt = _dtype_of(x)
    zero = util.convert_element_type(0, dt)
    mod = L.rem_p.bind(x, y)
    div = L.div_p.bind(L.sub_p.bind(x, mod), y)
    ind = L.and_p.bind(L.ne_p.bind(mod, zero), _sign_differs(y, mod))
    mod = L.select_n_p.bind(ind, mod, L.add_p.bind(mod, y))
    div = L.select_n_p.bind(ind, div, L.sub_p.bind(div, util.convert_element_type(1, dt)))
    div = L.round_p.bind(div, rounding_method=L.RoundingMethod.AWAY_FROM_ZERO)
    # As NumPy's npy_divmod and JAX: a zero divisor gives x / 0 (+-inf, nan for 0/0), not the nan
    # that the fmod-based path above makes; the remainder stays nan.
    div = L.select_n_p.bind(_like(L.eq_p.bind(y, zero), div), div, L.div_p.bind(x, y))
    return div, mod


def _like(pred, ref):
    """`pred` broadcast to `ref`'s shape (select_n does not broadcast; y may be (1, 1, n))."""
    shape, ps = get_aval(ref).shape, get_aval(pred).shape
    if ps == shape:
        return pred
    return L.broadcast_in_dim(pred, shape, tuple(range(len(shape) - len(ps), len(shape))))


def remainder(x1, x2, /):
    x, y = util.promote_args_numeric("remainder", x1, x2)
    dt = _dtype_of(x)
    if _dtypes.is_complex(dt):
        raise TypeError("remainder does not support complex operands")
    r = _int_rem_by_zero_is_zero(x, y, L.rem_p.bind(x, y))
    if _dtypes.is_unsigned(dt):
        return r
    zero = util.convert_element_type(0, dt)
    fix_sign = L.and_p.bind(L.ne_p.bind(r, zero), _sign_differs(r, y))
    return L.select_n_p.bind(fix_sign, r, L.add_p.bind(r, y))


def _int_rem_by_zero_is_zero(x, y, r):
    """jnp.remainder/fmod of integers by 0 give 0 in JAX (and NumPy); lax.rem gives x there."""
    dt = _dtype_of(r)
    if not _dtypes.is_integer(dt):
        return r
    zero = util.convert_element_type(0, dt)
    return L.select_n_p.bind(_like(L.eq_p.bind(y, zero), r), r, L.full_like(r, 0))


mod = remainder


def divmod(x1, x2, /):
    return floor_divide(x1, x2), remainder(x1, x2)


def fmod(x1, x2, /):
    x, y = util.promote_args_numeric("fmod", x1, x2)
    return _int_rem_by_zero_is_zero(x, y, L.rem_p.bind(x, y))


def power(x1, x2, /):
    util.check_arraylike("power", x1, x2)
    if type(x2) is int and not isinstance(x1, (int, float, complex)):
        x1 = util.asarray_like(x1)
        dt = _dtype_of(x1)
        if _dtypes.is_bool(dt):
            (x1,) = util.promote_dtypes_numeric(x1)
            dt = _dtype_of(x1)
        if x2 < 0 and not _dtypes.is_inexact(dt):
            raise ValueError("Integers to negative integer powers are not allowed (power).")
        return L.integer_pow_p.bind(x1, y=x2)
    x, y = util.promote_args_numeric("power", x1, x2)
    dt = _dtype_of(x)
    if _dtypes.is_integer(dt):
        return _integer_power(x, y)
    return L.pow_p.bind(x, y)


pow = power


def _integer_power(x, y):
    # Square-and-multiply over every bit of the exponent (data independent, so it traces).
    # Bring both to the broadcast shape first: the select below needs equal shapes.
    shape = np.broadcast_shapes(get_aval(x).shape, get_aval(y).shape)
    x, y = _broadcast_to(x, shape), _broadcast_to(y, shape)
    dt = _dtype_of(x)
    one = util.convert_element_type(1, dt)
    zero = util.convert_element_type(0, dt)
    acc = L.add_p.bind(L.mul_p.bind(x, zero), one)
    base = x
    for _ in range(dt.itemsize * 8):
        bit = L.ne_p.bind(L.and_p.bind(y, one), zero)
        acc = L.select_n_p.bind(bit, acc, L.mul_p.bind(acc, base))
        base = L.mul_p.bind(base, base)
        y = L.shift_right_logical_p.bind(y, one)
    return acc


def float_power(x1, x2, /):
    x, y = util.promote_args_inexact("float_power", x1, x2)
    return L.pow_p.bind(x, y)


def fmax(x1, x2, /):
    x, y = util.promote_args("fmax", x1, x2)
    # x1 only where it is strictly larger (or x2 is nan); ties, signed zeros included, take x2,
    # so the derivative at x1 == x2 goes wholly to x2, as in JAX (maximum splits it evenly).
    return where(logical_or(_lex_greater(x, y), isnan(y)), x, y)


def fmin(x1, x2, /):
    x, y = util.promote_args("fmin", x1, x2)
    return where(logical_or(_lex_greater(y, x), isnan(y)), x, y)


def _lex_greater(x, y):
    # Complex values order lexicographically (real part first), as max/min order them.
    if not _dtypes.is_complex(_dtype_of(x)):
        return greater(x, y)
    xr, yr = real(x), real(y)
    return logical_or(greater(xr, yr), logical_and(equal(xr, yr), greater(imag(x), imag(y))))


def hypot(x1, x2, /):
    x, y = util.promote_args_inexact("hypot", x1, x2)
    x, y = absolute(x), absolute(y)
    big, small = L.max_p.bind(x, y), L.min_p.bind(x, y)
    zero = util.convert_element_type(0, _dtype_of(big))
    safe = where(L.eq_p.bind(big, zero), util.convert_element_type(1, _dtype_of(big)), big)
    ratio = L.div_p.bind(small, safe)
    out = L.mul_p.bind(
        big, L.sqrt(L.add_p.bind(util.convert_element_type(1, _dtype_of(big)), L.mul_p.bind(ratio, ratio)))
    )
    return where(isinf(big), big, out)


def copysign(x1, x2, /):
    x, y = util.promote_args_inexact("copysign", x1, x2)
    return where(signbit(y), negative(absolute(x)), absolute(x))


def logaddexp(x1, x2, /):
    x, y = util.promote_args_inexact("logaddexp", x1, x2)
    return _logaddexp(x, y)


@custom_jvp
def _logaddexp(x, y):
    amax = L.max_p.bind(x, y)
    if _dtypes.is_complex(_dtype_of(x)):
        # As JAX: amax (lexicographic) plus log1p(exp(x + y - 2 amax)), the imaginary part
        # wrapped into [-pi, pi].
        two = util.convert_element_type(2, _dtype_of(x))
        delta = L.sub_p.bind(L.add_p.bind(x, y), L.mul_p.bind(amax, two))
        out = L.add_p.bind(amax, L.log1p(L.exp(delta)))
        return L.complex(real(out), _wrap_between(imag(out), np.pi))
    delta = L.sub_p.bind(x, y)
    finite = L.log1p(L.exp(L.neg_p.bind(L.abs_p.bind(delta))))
    out = L.add_p.bind(amax, finite)
    # inf - inf is nan: equal infinities return themselves.
    return where(isnan(delta), L.add_p.bind(x, y), out)


def _wrap_between(x, bound):
    """`x` moved by multiples of 2 bound into [-bound, bound]."""
    dt = _dtype_of(x)
    a, two_a = util.convert_element_type(bound, dt), util.convert_element_type(2 * bound, dt)
    rem = L.rem(L.add_p.bind(x, a), two_a)
    rem = where(L.lt(rem, util.convert_element_type(0, dt)), L.add_p.bind(rem, two_a), rem)
    return L.sub_p.bind(rem, a)


def _posinf_to_zero(x):
    return where(isposinf(real(x)), 0, x)  # a weak 0: x's dtype and weak type (gradients stay weak)


@_logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    # Differentiating the max/abs formulation above gives the whole tangent to one side at
    # x == y (abs' is 1 at 0, so the log1p term's -+1/2 cancels max's 1/2 for x and doubles it
    # for y): softplus(0) would have slope 0 and a zero-initialised logistic regression would
    # not move. The exact partials are exp(x - out) and exp(y - out), 1/2 each at a tie. +inf
    # is read as 0 on both sides of the subtraction so that an infinite result gives finite
    # partials rather than exp(inf - inf) (JAX's convention, so the infinities match too).
    x, y = primals
    tx, ty = tangents
    out = _logaddexp(x, y)
    o = _posinf_to_zero(out)
    tx = L.mul_p.bind(tx, exp(L.sub_p.bind(_posinf_to_zero(x), o)))
    ty = L.mul_p.bind(ty, exp(L.sub_p.bind(_posinf_to_zero(y), o)))
    return out, add(tx, ty)


def logaddexp2(x1, x2, /):
    x, y = util.promote_args_inexact("logaddexp2", x1, x2)
    ln2 = util.convert_element_type(np.log(2.0), _dtype_of(x))
    return L.div_p.bind(logaddexp(L.mul_p.bind(x, ln2), L.mul_p.bind(y, ln2)), ln2)


def left_shift(x1, x2, /):
    x, y = util.promote_args("left_shift", x1, x2)
    _int_or_bool("left_shift", _dtype_of(x))
    return L.shift_left_p.bind(x, y)


def right_shift(x1, x2, /):
    x, y = util.promote_args("right_shift", x1, x2)
    dt = _dtype_of(x)
    _int_or_bool("right_shift", dt)
    if _dtypes.is_unsigned(dt):
        return L.shift_right_logical_p.bind(x, y)
    return L.shift_right_arithmetic_p.bind(x, y)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def _logical(name, prim_name):
    def fn(x1, x2, /):
        util.check_arraylike(name, x1, x2)
        x, y = util.promote_shapes(name, *[_as_bool(a) for a in (x1, x2)])
        return getattr(L, prim_name).bind(x, y)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _as_bool(x):
    x = util.asarray_like(x)
    if _dtypes.is_bool(_dtype_of(x)):
        return x
    return not_equal(x, 0)


logical_and = _logical("logical_and", "and_p")
logical_or = _logical("logical_or", "or_p")
logical_xor = _logical("logical_xor", "xor_p")


def heaviside(x1, x2, /):
    x, h0 = util.promote_args_inexact("heaviside", x1, x2)
    zero = util.convert_element_type(0, _dtype_of(x))
    one = util.convert_element_type(1, _dtype_of(x))
    return where(less(x, zero), zero, where(greater(x, zero), one, h0))


def where(condition, x, y, /):
    """``where(c, x, y)``: x where c is true, else y, elementwise (broadcast). The public
    ``jnp.where``, which also has the one-argument form, is searching.where."""
    if isinstance(getattr(x, "dtype", None), _dtypes.ExtendedDType) or isinstance(
        getattr(y, "dtype", None), _dtypes.ExtendedDType
    ):
        return _where_extended(condition, x, y)
    util.check_arraylike("where", condition, x, y)
    x, y = util.promote_dtypes(x, y)
    c = _as_bool(condition)
    # Broadcast without the rank-promotion check: JAX's where allows it under 'raise' too.
    shapes = [get_aval(a).shape for a in (c, x, y)]
    util._check_broadcastable("where", shapes)
    shape = np.broadcast_shapes(*shapes)
    c, x, y = [_broadcast_to(a, shape) for a in (c, x, y)]
    return L.select_n_p.bind(c, y, x)


def _where_extended(condition, x, y):
    """``where`` between two arrays of one extended dtype (typed PRNG keys, as in JAX): selects
    on their physical data, whose trailing axes (the key words) the condition broadcasts over."""
    dt = getattr(x, "dtype", None)
    if not isinstance(dt, _dtypes.ExtendedDType) or getattr(y, "dtype", None) != dt:
        bad = dt if isinstance(dt, _dtypes.ExtendedDType) else y.dtype
        raise ValueError(f"dtype={bad} is not a valid dtype for JAX type promotion.")
    c = _as_bool(condition)
    xd, yd = dt.physical(x), dt.physical(y)
    trailing = tuple(dt.key_shape)
    shape = np.broadcast_shapes(get_aval(c).shape, tuple(x.shape), tuple(y.shape))
    full = (*shape, *trailing)
    c = L.broadcast_in_dim(_broadcast_to(c, shape), full, tuple(range(len(shape))))
    return dt.wrap_physical(L.select_n_p.bind(c, _broadcast_to(yd, full), _broadcast_to(xd, full)))


def _broadcast_to(x, shape):
    aval = get_aval(x)
    if aval.shape == tuple(shape):
        return x
    nlead = len(shape) - len(aval.shape)
    return L.broadcast_in_dim(x, tuple(shape), tuple(range(nlead, len(shape))))


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Clip values to [min, max]; either bound may be None."""
    x = arr if arr is not None else a
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if x is None:
        raise TypeError("clip: missing the array argument")
    util.check_arraylike("clip", x)
    for v in (x, lo, hi):
        if v is not None and _dtypes.is_complex(_dtype_of(util.asarray_like(v))):
            raise ValueError(
                "clip received a complex value (in the array or the min/max bounds); complex values "
                "have no ordering and cannot be clipped. Take the real or imaginary part first "
                "(jnp.real / jnp.imag)."
            )
    if lo is not None:
        x = maximum(lo, x)
    if hi is not None:
        x = minimum(hi, x)
    return x
