"""Unary elementwise primitives: sign and rounding, bit counting, complex parts, integer powers.

Each primitive is one declaration (`elementwise_unop`) with its lax wrapper right beside it;
the transcendental functions live in `transcendental.py` and reuse the builder and spec helpers
defined here. Semantics follow XLA where it differs from NumPy; derivative rules follow JAX's
(abs has slope +1 at 0; real/imag/conj transpose without conjugating). Under vmap the batch axis
stays where it is (the builder sets `vectorized_batcher`). Imports the core and the rule helpers;
other lax functions are looked up when a rule runs.
"""

from __future__ import annotations

import enum

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import is_zero
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import defjvp_zero, deflinear
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, unary_cases
from morphax._src.prims.builders import as_arrays, concat_cases, elementwise_unop

__all__ = [
    "neg_p",
    "neg",
    "sign_p",
    "sign",
    "RoundingMethod",
    "floor_p",
    "ceil_p",
    "floor",
    "ceil",
    "round_p",
    "round",
    "is_finite_p",
    "is_finite",
    "not_p",
    "bitwise_not",
    "population_count_p",
    "clz_p",
    "population_count",
    "clz",
]


def _unsigned_of(dt):
    return np.dtype(f"uint{dt.itemsize * 8}")


def _signed_of(dt):
    return np.dtype(f"int{dt.itemsize * 8}")


neg_p = elementwise_unop("neg", np.negative, "numeric", spec=TestSpec(cases=unary_cases("numeric")))
neg_p.stablehlo = hlo.elementwise("stablehlo.negate")
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


def _sign_stablehlo(ctx, x):
    if not _dtypes.is_unsigned(x.dtype):
        return [ctx.op1("stablehlo.sign", [x], x)]
    # StableHLO's sign takes no unsigned operand: 0 where x is 0, else 1.
    zero, one = ctx.constant(0, x.dtype, x.shape), ctx.constant(1, x.dtype, x.shape)
    is_zero = hlo.compare_values(ctx, x, zero, "EQ")
    return [ctx.op1("stablehlo.select", [is_zero, zero, one], x)]


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
sign_p.stablehlo = _sign_stablehlo


def sign(x):
    """Elementwise sign: -1/0/1 (keeping -0.0 and nan) for reals, ``x / |x|`` for complex."""
    return sign_p.bind(x)


class RoundingMethod(enum.IntEnum):
    """How `round` treats halfway values."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


_HALVES = (0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 1e7 + 0.5)
_ROUND_SPECIALS = FLOAT_SPECIALS + _HALVES
floor_p = elementwise_unop(
    "floor", np.floor, "float", spec=TestSpec(cases=unary_cases("float", specials=_ROUND_SPECIALS))
)
floor_p.stablehlo = hlo.elementwise("stablehlo.floor")


ceil_p = elementwise_unop(
    "ceil", np.ceil, "float", spec=TestSpec(cases=unary_cases("float", specials=_ROUND_SPECIALS))
)
ceil_p.stablehlo = hlo.elementwise("stablehlo.ceil")


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


def _round_stablehlo(ctx, x, *, rounding_method):
    op = "round_nearest_even" if rounding_method == RoundingMethod.TO_NEAREST_EVEN else "round_nearest_afz"
    return [ctx.op1(f"stablehlo.{op}", [x], x)]


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
round_p.stablehlo = _round_stablehlo


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 - JAX's name
    """Elementwise round to integer; halves go away from zero by default, or to even."""
    return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


is_finite_p = elementwise_unop(
    "is_finite", np.isfinite, "float", out_dtype=lambda _: np.bool_, spec=TestSpec(cases=unary_cases("float"))
)
is_finite_p.stablehlo = hlo.elementwise("stablehlo.is_finite")


def is_finite(x):
    """Elementwise test for neither infinite nor nan (floating dtypes only); gives bool."""
    return is_finite_p.bind(x)


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
not_p.stablehlo = hlo.elementwise("stablehlo.not")


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
population_count_p.stablehlo = hlo.elementwise("stablehlo.popcnt")


clz_p = elementwise_unop(
    "clz",
    _clz_impl,
    "integer",
    spec=TestSpec(cases=concat_cases(unary_cases("integer"), _int_edge_cases(_INT_DTYPES, "edges"))),
)
clz_p.stablehlo = hlo.elementwise("stablehlo.count_leading_zeros")


def population_count(x):
    """Elementwise number of set bits (of the two's complement pattern for signed dtypes)."""
    return population_count_p.bind(x)


def clz(x):
    """Elementwise count of leading zero bits (0 for negative signed values, the width for 0)."""
    return clz_p.bind(x)


# Piecewise constant or integer valued: a zero derivative (JAX gives them a zero JVP or, for the bit
# counts, none; integer outputs have float0 tangents anyway), nothing to check numerically.
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p):
    defjvp_zero(_p)
    _p.test_spec.differentiable = False
    _p.test_spec.grad_order = 0
