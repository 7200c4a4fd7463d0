"""Unary elementwise primitives: sign and rounding, bit counting, complex parts, integer powers.

Each primitive is one declaration (`elementwise_unop`) with its lax wrapper right beside it;
the transcendental functions live in `transcendental.py` and reuse the builder and spec helpers
defined here. Semantics follow XLA where it differs from NumPy; derivative rules follow JAX's
(abs has slope +1 at 0; real/imag/conj transpose without conjugating). Under vmap the batch axis
stays where it is (the builder sets `vectorized_batcher`). Imports the core and the rule helpers;
other lax functions are looked up when a rule runs.
"""

from __future__ import annotations

import builtins
import enum
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import tangent_aval
from morphax._src.core.avals import get_aval
from morphax._src.prims._ad import Zero, _lax, aval_of, defjvp, defjvp_zero, deflinear, is_zero
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, unary_cases
from morphax._src.prims.builders import as_arrays, concat_cases, elementwise_unop

__all__ = [
    "RoundingMethod",
    "abs",
    "abs_p",
    "ceil",
    "ceil_p",
    "clz",
    "clz_p",
    "conj",
    "conj_p",
    "bitwise_not",
    "floor",
    "floor_p",
    "imag",
    "imag_p",
    "integer_pow",
    "integer_pow_p",
    "is_finite",
    "is_finite_p",
    "neg",
    "neg_p",
    "not_p",
    "population_count",
    "population_count_p",
    "real",
    "real_p",
    "reciprocal",
    "round",
    "round_p",
    "sign",
    "sign_p",
    "square",
    "square_p",
]

# ---------------------------------------------------------------------------------------------
# Builder and spec helpers, shared with transcendental.py.


def _unsigned_of(dt):
    return np.dtype(f"uint{dt.itemsize * 8}")


def _signed_of(dt):
    return np.dtype(f"int{dt.itemsize * 8}")


# ---------------------------------------------------------------------------------------------
# Sign and negation.

neg_p = elementwise_unop("neg", np.negative, "numeric", spec=TestSpec(cases=unary_cases("numeric")))


deflinear(neg_p, lambda ct, x: [ct if is_zero(ct) else neg(ct)])


def neg(x):
    """Elementwise ``-x``; unsigned integers wrap (``2**nbits - x``)."""
    return neg_p.bind(x)


def _sign_impl(x):
    (x,) = as_arrays(x)
    if _dtypes.is_complex(x.dtype):
        # XLA divides each component by |x| and maps 0 to 0 (an infinite |x| gives nan).
        mag = np.abs(x)
        zero = mag == 0
        safe = np.where(zero, 1, mag)
        out = np.empty(x.shape, x.dtype)
        out.real = np.where(zero, 0, np.divide(x.real, safe))
        out.imag = np.where(zero, 0, np.divide(x.imag, safe))
        return out
    if _dtypes.is_floating(x.dtype):
        # copysign keeps -0.0 (NumPy's sign gives +0.0); nan stays nan.
        one_or_zero = (x != 0).astype(x.dtype)
        return np.where(np.isnan(x), x, np.copysign(one_or_zero, x))
    return np.sign(x)


sign_p = elementwise_unop(
    "sign",
    _sign_impl,
    "numeric",
    spec=TestSpec(
        cases=unary_cases(
            "numeric", dtype_list=("float32", "bfloat16", "int32", "uint8", "int8", "complex64")
        )
    ),
)


def sign(x):
    """Elementwise sign: -1/0/1 (keeping -0.0 and nan) for reals, ``x / |x|`` for complex."""
    return sign_p.bind(x)


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


def _abs_partial(g, ans, x):
    L = _lax()
    if not _dtypes.is_complex(aval_of(x).dtype):
        # Slope +1 at 0 (and -0.0), as JAX: select(x >= 0, g, -g).
        return L.select(L.ge(x, 0), g, neg(g))
    # d|x| = real(conj(x) dx) / |x|; at x == 0 the divisor becomes 1 (conj(x) is 0 there), giving 0.
    safe = L.select(L.eq(ans, 0), L.full_like(ans, 1), ans)
    return real(L.mul(g, L.div(conj(x), L.complex(safe, 0.0))))


defjvp(abs_p, _abs_partial)  # integer abs has float0 tangents: no partial needed


def abs(x):  # noqa: A001 - JAX's name
    """Elementwise ``|x|``; complex inputs give the real magnitude, ``abs(INT_MIN)`` wraps."""
    return abs_p.bind(x)


# ---------------------------------------------------------------------------------------------
# Rounding.


class RoundingMethod(enum.IntEnum):
    """How `round` treats halfway values."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


_HALVES = (0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 1e7 + 0.5)
_ROUND_SPECIALS = FLOAT_SPECIALS + _HALVES

floor_p = elementwise_unop(
    "floor", np.floor, "float", spec=TestSpec(cases=unary_cases("float", specials=_ROUND_SPECIALS))
)
ceil_p = elementwise_unop(
    "ceil", np.ceil, "float", spec=TestSpec(cases=unary_cases("float", specials=_ROUND_SPECIALS))
)


def floor(x):
    """Elementwise floor (floating dtypes only)."""
    return floor_p.bind(x)


def ceil(x):
    """Elementwise ceiling (floating dtypes only)."""
    return ceil_p.bind(x)


def _round_impl(x, *, rounding_method):
    (x,) = as_arrays(x)
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return np.rint(x)
    # Half away from zero without adding 0.5 (which rounds 0.49999997 + 0.5 up to 1): trunc,
    # then step away from zero when the exact fractional part is at least one half.
    t = np.trunc(x)
    frac = np.abs(np.subtract(x, t))
    stepped = np.add(t, np.copysign(np.ones_like(x), x))
    return np.where(frac >= 0.5, stepped, t).astype(x.dtype)  # t keeps the sign of -0.4 -> -0.0


round_p = elementwise_unop(
    "round",
    _round_impl,
    "float",
    spec=TestSpec(
        cases=unary_cases(
            "float",
            specials=_ROUND_SPECIALS,
            params=[{"rounding_method": m} for m in RoundingMethod],
        )
    ),
)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 - JAX's name
    """Elementwise round to integer; halves go away from zero by default, or to even."""
    return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


is_finite_p = elementwise_unop(
    "is_finite", np.isfinite, "float", out_dtype=lambda _: np.bool_, spec=TestSpec(cases=unary_cases("float"))
)


def is_finite(x):
    """Elementwise test for neither infinite nor nan (floating dtypes only); gives bool."""
    return is_finite_p.bind(x)


# ---------------------------------------------------------------------------------------------
# Bits.

_INT_BOOL_EDGES = (0, 1, -1, 2, 7, -128, 127, 255, 2**31 - 1, -(2**31), 2**32 - 1)


def _int_edge_cases(dtype_names, name):
    """Every integer dtype's extremes and a few bit patterns as one vector case."""

    def cases(rng):
        out = []
        for dt in dtype_names:
            info = np.iinfo(np.dtype(dt))
            vals = sorted(
                {v for v in _INT_BOOL_EDGES if info.min <= v <= info.max} | {int(info.min), int(info.max)}
            )
            out.append(Case((np.array(vals, dtype=dt),), {}, f"{dt}-{name}"))
        return out

    return cases


not_p = elementwise_unop(
    "not",
    np.invert,
    "int_or_bool",
    spec=TestSpec(
        cases=concat_cases(
            unary_cases("int_or_bool"), _int_edge_cases(("int32", "uint32", "int8", "uint8"), "edges")
        )
    ),
)


def bitwise_not(x):
    """Elementwise bitwise NOT (logical NOT for bool)."""
    return not_p.bind(x)


def _popcount_impl(x):
    (x,) = as_arrays(x)
    # Count the bits of the two's complement pattern: NumPy's bitwise_count counts |x| for signed.
    u = x.view(_unsigned_of(x.dtype))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(u).astype(x.dtype)
    count = np.zeros(u.shape, u.dtype)
    for k in range(u.dtype.itemsize * 8):
        count = np.add(count, np.bitwise_and(np.right_shift(u, k), 1), dtype=u.dtype)
    return count.astype(x.dtype)


def _clz_impl(x):
    (x,) = as_arrays(x)
    u = x.view(_unsigned_of(x.dtype))
    bits = u.dtype.itemsize * 8
    # bit_length(u): the highest k for which u >> k is still nonzero, plus one.
    length = np.zeros(u.shape, np.int64)
    for k in range(bits):
        length = np.where(np.right_shift(u, k) != 0, k + 1, length)
    return (bits - length).astype(x.dtype)


_INT_DTYPES = ("int32", "uint32", "int8", "uint8", "int16")
population_count_p = elementwise_unop(
    "population_count",
    _popcount_impl,
    "integer",
    spec=TestSpec(cases=concat_cases(unary_cases("integer"), _int_edge_cases(_INT_DTYPES, "edges"))),
)
clz_p = elementwise_unop(
    "clz",
    _clz_impl,
    "integer",
    spec=TestSpec(cases=concat_cases(unary_cases("integer"), _int_edge_cases(_INT_DTYPES, "edges"))),
)


def population_count(x):
    """Elementwise number of set bits (of the two's complement pattern for signed dtypes)."""
    return population_count_p.bind(x)


def clz(x):
    """Elementwise count of leading zero bits (0 for negative signed values, the width for 0)."""
    return clz_p.bind(x)


# ---------------------------------------------------------------------------------------------
# Complex parts.


def _complex_special_cases(rng):
    vals = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan], dtype=np.float32)
    re, im = np.meshgrid(vals, vals)
    z = np.empty(re.size, np.complex64)
    z.real, z.imag = re.ravel(), im.ravel()
    return [Case((z,), {}, "complex64-specials")]


real_p = elementwise_unop(
    "real",
    lambda x: np.real(x).copy(),
    "complex",
    out_dtype=_dtypes.real_dtype,
    spec=TestSpec(cases=concat_cases(unary_cases("complex"), _complex_special_cases)),
)
imag_p = elementwise_unop(
    "imag",
    lambda x: np.imag(x).copy(),
    "complex",
    out_dtype=_dtypes.real_dtype,
    spec=TestSpec(cases=concat_cases(unary_cases("complex"), _complex_special_cases)),
)


# Linear; transposes use the plain (non-conjugating) pairing, JAX's convention for complex values:
# real(t) pairs with ct as complex(ct, 0) does with t, imag(t) as complex(0, -ct) does.
deflinear(real_p, lambda ct, x: [ct if is_zero(ct) else _lax().complex(ct, 0.0)])
deflinear(imag_p, lambda ct, x: [ct if is_zero(ct) else _lax().complex(0.0, neg(ct))])


def real(x):
    """Elementwise real part of a complex array (complex64 -> float32)."""
    return real_p.bind(x)


def imag(x):
    """Elementwise imaginary part of a complex array (complex64 -> float32)."""
    return imag_p.bind(x)


# JAX's conj accepts complex dtypes and the two component dtypes (float32, float64), not f16/bf16.
_CONJ_CLASS = (
    lambda d: _dtypes.is_complex(d) or np.dtype(d) in (_dtypes.float32, _dtypes.float64),
    "complexfloating, float32 or float64",
)


def _conj_impl(x, *, input_dtype):
    (x,) = as_arrays(x)
    if _dtypes.is_complex(x.dtype):
        return np.conj(x)
    return x.astype(_dtypes.to_complex_dtype(x.dtype))


def _conj_cases(rng):
    base = concat_cases(
        unary_cases("complex"), _complex_special_cases, unary_cases("float", dtype_list=("float32",))
    )
    return [Case(c.args, {"input_dtype": c.args[0].dtype}, c.name) for c in base(rng)]


conj_p = elementwise_unop(
    "conj",
    _conj_impl,
    _CONJ_CLASS,
    out_dtype=_dtypes.to_complex_dtype,
    spec=TestSpec(cases=_conj_cases),
)


def _conj_transpose(ct, x, *, input_dtype):
    if is_zero(ct):
        return [Zero(x.aval)]
    # A real input was widened to complex: its cotangent is the real part.
    return [conj(ct) if _dtypes.is_complex(input_dtype) else real(ct)]


deflinear(conj_p, _conj_transpose)


def conj(x):
    """Elementwise complex conjugate; a float32/float64 input gives the matching complex dtype."""
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)


# ---------------------------------------------------------------------------------------------
# Integer powers.


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


def _integer_pow_partial(g, ans, x, *, y):
    if y == 0:
        return Zero(tangent_aval(aval_of(ans)))
    return _lax().mul(g, _lax().mul(y, integer_pow(x, y - 1)))


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


def square(x):
    """Elementwise ``x * x``."""
    return square_p.bind(x)


defjvp(square_p, lambda g, ans, x: _lax().mul(g, _lax().mul(2, x)))


# Piecewise constant or integer valued: a zero derivative (JAX gives them a zero JVP or, for the bit
# counts, none; integer outputs have float0 tangents anyway), nothing to check numerically.
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p):
    defjvp_zero(_p)
    _p.test_spec.differentiable = False
    _p.test_spec.grad_order = 0
