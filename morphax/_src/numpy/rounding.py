"""Rounding (round/around, halves to even; integers exactly) and closeness tests (isclose,
allclose, array_equal, array_equiv), composed from ufuncs so they trace under jit/grad/vmap."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.numpy import ufuncs, util
from morphax._src.numpy.creation import concrete_int
from morphax._src.prims import lax_api as L

__all__ = ["round", "around", "isclose", "allclose", "array_equal", "array_equiv"]


def _arr(fun_name, x):
    util.check_arraylike(fun_name, x)
    return util.asarray_like(x)


# ----------------------------------------------------------------------------------- rounding


def _round_real(x, decimals):
    dt = get_aval(x).dtype
    if decimals == 0:
        return L.round_p.bind(x, rounding_method=L.RoundingMethod.TO_NEAREST_EVEN)
    # float16 has too little precision for the scaled value; round in float32 as JAX does.
    work = _dtypes.float32 if _dtypes.is_16bit_float(dt) else dt
    weak = get_aval(x).weak_type
    y = util.convert_element_type(x, work, weak)
    if decimals > 0:
        f = util.convert_element_type(10.0**decimals, work, weak)
        y = ufuncs.true_divide(
            L.round_p.bind(ufuncs.multiply(y, f), rounding_method=L.RoundingMethod.TO_NEAREST_EVEN), f
        )
    else:
        f = util.convert_element_type(10.0 ** (-decimals), work, weak)
        y = ufuncs.multiply(
            L.round_p.bind(ufuncs.true_divide(y, f), rounding_method=L.RoundingMethod.TO_NEAREST_EVEN), f
        )
    return util.convert_element_type(y, dt, weak)


def _round_int(x, decimals):
    aval = get_aval(x)
    dt = aval.dtype
    f = 10 ** (-decimals)
    if f > np.iinfo(dt).max:
        return ufuncs.multiply(x, util.convert_element_type(0, dt, aval.weak_type))
    fa = util.convert_element_type(f, dt, aval.weak_type)
    q = ufuncs.floor_divide(x, fa)
    r = ufuncs.subtract(x, ufuncs.multiply(q, fa))  # in [0, f)
    rest = ufuncs.subtract(fa, r)
    odd = ufuncs.not_equal(ufuncs.bitwise_and(q, util.convert_element_type(1, dt, aval.weak_type)), 0)
    up = ufuncs.logical_or(ufuncs.greater(r, rest), ufuncs.logical_and(ufuncs.equal(r, rest), odd))
    q = ufuncs.add(q, util.convert_element_type(up, dt, aval.weak_type))
    return ufuncs.multiply(q, fa)


def round(a, decimals=0, out=None):  # noqa: A001 - NumPy's name
    """Round to `decimals` places, halves to even (as NumPy); integers round exactly."""
    if out is not None:
        raise NotImplementedError("round: the 'out' argument is not supported")
    a = _arr("round", a)
    decimals = concrete_int(decimals, "'decimals' argument of jnp.round")
    dt = get_aval(a).dtype
    if _dtypes.is_bool(dt):
        return a
    if _dtypes.is_integer(dt):
        return a if decimals >= 0 else _round_int(a, decimals)
    if _dtypes.is_complex(dt):
        re = _round_real(ufuncs.real(a), decimals)
        im = _round_real(ufuncs.imag(a), decimals)
        if hasattr(L, "complex_p"):
            return L.complex_p.bind(re, im)
        return ufuncs.add(
            util.convert_element_type(re, dt), ufuncs.multiply(util.convert_element_type(im, dt), 1j)
        )
    return _round_real(a, decimals)


around = round


# ---------------------------------------------------------------------------------- closeness


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise, with infinities equal only to themselves."""
    a, b = util.promote_args_inexact("isclose", a, b)
    dt = get_aval(a).dtype
    rdt = _dtypes.real_dtype(dt)
    rtol = util.convert_element_type(rtol, rdt)
    atol = util.convert_element_type(atol, rdt)
    close = ufuncs.less_equal(
        ufuncs.absolute(ufuncs.subtract(a, b)), ufuncs.add(atol, ufuncs.multiply(rtol, ufuncs.absolute(b)))
    )
    a_inf, b_inf = ufuncs.isinf(a), ufuncs.isinf(b)
    # Finite closeness is meaningless when an infinity is involved: only equal infinities match.
    close = ufuncs.logical_and(close, ufuncs.logical_not(ufuncs.logical_or(a_inf, b_inf)))
    close = ufuncs.logical_or(close, ufuncs.logical_and(ufuncs.logical_and(a_inf, b_inf), ufuncs.equal(a, b)))
    a_nan, b_nan = ufuncs.isnan(a), ufuncs.isnan(b)
    close = ufuncs.logical_and(close, ufuncs.logical_not(ufuncs.logical_or(a_nan, b_nan)))
    if equal_nan:
        close = ufuncs.logical_or(close, ufuncs.logical_and(a_nan, b_nan))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """All elements of `isclose` (a 0-d bool array)."""
    from morphax._src.numpy import reductions

    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True when both have the same shape and elements (a 0-d bool array)."""
    util.check_arraylike("array_equal", a1, a2)
    from morphax._src.numpy import reductions

    if np.shape(a1) != np.shape(a2):
        return make_array(False, np.bool_)
    eq = ufuncs.equal(a1, a2)
    if equal_nan:
        eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(eq)


def array_equiv(a1, a2):
    """True when the arrays broadcast together and are equal elementwise."""
    util.check_arraylike("array_equiv", a1, a2)
    from morphax._src.numpy import reductions

    try:
        np.broadcast_shapes(np.shape(a1), np.shape(a2))
    except ValueError:
        return make_array(False, np.bool_)
    return reductions.all(ufuncs.equal(a1, a2))
