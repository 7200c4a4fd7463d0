"""The `reduce_precision` primitive: XLA's ReducePrecision, rounding a float to fewer exponent and mantissa bits, computed on the bit pattern."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_zero
from morphax._src.prims import _stablehlo_bits as hlo_bits
from morphax._src.prims._ad import deflinear
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims._spec import TestSpec, unary_cases
from morphax._src.prims.builders import elementwise_unop

__all__ = [
    "reduce_precision",
    "reduce_precision_p",
]


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# ------------------------------------------------------------------------------------------------
# reduce_precision: XLA's ReducePrecision, computed on the bit pattern. The mantissa rounds to
# nearest even (adding half an ulp of the target, minus one unless the kept last bit is set, then
# truncating); exponents beyond the target range become signed infinity, those at or below its
# smallest normal exponent signed zero; NaN inputs stay NaN.


def _reduce_precision_bits(x, exponent_bits, mantissa_bits):
    dt = x.dtype
    nbits = dt.itemsize * 8
    m_src = int(_dtypes.finfo(dt).nmant)
    e_src = nbits - 1 - m_src
    ut = _UINT[dt.itemsize]
    one = ut(1)
    bits = np.array(x, copy=True, order="C").view(ut)
    if mantissa_bits < m_src:
        shift = ut(m_src - mantissa_bits)
        last = one << shift
        kept_last = (bits & last) >> shift
        bits = (bits + kept_last + ((last >> one) - one)) & ~(last - one)
    if exponent_bits < e_src:
        sign = one << ut(nbits - 1)
        exp_mask = ut(((1 << e_src) - 1) << m_src)
        bias, reduced_bias = (1 << (e_src - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        signed_zero = bits & sign
        over = exponent > ut((bias + reduced_bias) << m_src)
        under = exponent <= ut((bias - reduced_bias) << m_src)
        bits = np.where(over, signed_zero | exp_mask, np.where(under, signed_zero, bits))
    return np.asarray(bits, ut).view(dt)


def _reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    dt = x.dtype
    with np.errstate(over="ignore"):
        if dt in (_dtypes.float16, _dtypes.float32, _dtypes.float64) or _dtypes.is_bfloat16(dt):
            out = _reduce_precision_bits(x, exponent_bits, mantissa_bits)
        else:  # float8 and friends: their encodings differ (no inf, unsigned zero); go via float32
            wide = x.astype(np.float32)
            out = _reduce_precision_bits(wide, exponent_bits, mantissa_bits).astype(dt)
        nan = np.isnan(x.astype(np.float32) if dt.itemsize < 4 else x)
        if _dtypes.is_bfloat16(dt) and (exponent_bits < 8 or mantissa_bits < 23):
            # XLA CPU rounds bfloat16 in float32 and converts back, which quiets every NaN to the
            # canonical pattern (sign kept); JAX's results show exactly that. A rounding that is a
            # no-op in float32 is simplified away, so the NaN payload survives then.
            canon = (x.view(np.uint16) & np.uint16(0x8000)) | np.uint16(0x7FC0)
            return np.where(nan, canon.view(dt), out)
        return np.where(nan, x, out)


def _check_precision_bits(x, *, exponent_bits, mantissa_bits):
    if not isinstance(exponent_bits, (int, np.integer)) or exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if not isinstance(mantissa_bits, (int, np.integer)) or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")


_PRECISION_SPECIALS = (
    0.0,
    -0.0,
    1.0,
    -1.0,
    np.inf,
    -np.inf,
    np.nan,
    1e-6,
    -3e-5,
    65504.0,
    65520.0,
    1.00390625,
    1.01171875,
    1.5,
    2.5e-38,
    1e-40,
    3.4e38,
    0.1,
    1e4,
    -7.3e-3,
)

reduce_precision_p = elementwise_unop(
    "reduce_precision",
    _reduce_precision_impl,
    "float",
    check=_check_precision_bits,
    spec=TestSpec(
        # (11, 52) comes first: it is the identity for every dtype here, so the derivative matrix
        # (which runs in float64) sees a function whose finite differences are meaningful.
        cases=unary_cases(
            "float",
            specials=_PRECISION_SPECIALS,
            params=[
                {"exponent_bits": e, "mantissa_bits": m}
                for e, m in ((11, 52), (8, 23), (5, 10), (8, 7), (4, 3), (2, 1), (1, 0), (3, 0))
            ],
        )
    ),
)
reduce_precision_p.stablehlo = hlo_bits.reduce_precision
deflinear(
    reduce_precision_p,
    lambda ct, x, **params: [Zero(x.aval) if is_zero(ct) else reduce_precision_p.bind(ct, **params)],
)


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """Round `operand` to a float format with `exponent_bits` and `mantissa_bits` (XLA's
    ReducePrecision), keeping the dtype: round to nearest even, overflow to inf, NaN kept."""
    try:
        exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
    except TypeError:
        raise TypeError(
            "reduce_precision: exponent_bits and mantissa_bits must be concrete Python ints, got "
            f"{exponent_bits!r} and {mantissa_bits!r}."
        ) from None
    return reduce_precision_p.bind(
        as_lax_array(operand), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits
    )
