"""Elementwise functions NumPy has and lax composes from its primitives: angle conversions
(deg2rad, radians, ...), fabs, sinc (with its derivative at 0), nan_to_num, angle, ldexp, frexp,
modf, gcd, lcm, spacing and i0. They trace under jit, grad and vmap."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, manipulation, reductions, ufuncs, util
from morphax._src.prims import lax_api as L
from morphax._src.transforms.custom import custom_jvp

__all__ = [
    "deg2rad",
    "rad2deg",
    "radians",
    "degrees",
    "fabs",
    "sinc",
    "nan_to_num",
    "angle",
    "ldexp",
    "modf",
    "gcd",
    "lcm",
    "frexp",
    "spacing",
    "i0",
]


def deg2rad(x, /):
    x = util.checked_inexact("deg2rad", x)
    return ufuncs.multiply(x, np.pi / 180)


def rad2deg(x, /):
    x = util.checked_inexact("rad2deg", x)
    return ufuncs.multiply(x, 180 / np.pi)


def radians(x, /):
    return deg2rad(x)


def degrees(x, /):
    return rad2deg(x)


def fabs(x, /):
    x = util.checked_inexact("fabs", x)
    if _dtypes.is_complex(x.dtype):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return ufuncs.abs(x)


def sinc(x, /):
    x = util.checked_inexact("sinc", x)
    eq0 = ufuncs.equal(x, 0)
    pi_x = ufuncs.multiply(x, np.pi)
    safe = ufuncs.where(eq0, creation.ones_like(x), pi_x)
    return ufuncs.where(eq0, _sinc_maclaurin(0, pi_x), ufuncs.divide(ufuncs.sin(safe), safe))


def _sinc_maclaurin_impl(k, x):
    """The k-th derivative of sin(y)/y at y = 0 (broadcast like x): its derivatives at x = 0, of
    every order, come from the next term of the series (as in JAX)."""
    zero = ufuncs.multiply(x, 0)
    if k % 2:
        return zero
    return ufuncs.add(zero, (-1) ** (k // 2) / (k + 1))


def _sinc_maclaurin_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _sinc_maclaurin(k, x), ufuncs.multiply(_sinc_maclaurin(k + 1, x), t)


_sinc_maclaurin = custom_jvp(_sinc_maclaurin_impl, nondiff_argnums=(0,))


_sinc_maclaurin.defjvp(_sinc_maclaurin_jvp)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    del copy
    x = util.checked_array("nan_to_num", x)
    dt = x.dtype
    if not _dtypes.is_inexact(dt):
        return x
    if _dtypes.is_complex(dt):
        re = nan_to_num(ufuncs.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(ufuncs.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return L.complex(re, im)
    info = np.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = ufuncs.where(ufuncs.isnan(x), util.convert_element_type(nan, dt), x)
    out = ufuncs.where(ufuncs.isposinf(out), util.convert_element_type(posinf, dt), out)
    out = ufuncs.where(ufuncs.isneginf(out), util.convert_element_type(neginf, dt), out)
    return out


def angle(z, deg=False):
    z = util.checked_array("angle", z)
    dt = z.dtype
    if _dtypes.is_complex(dt):
        re, im = ufuncs.real(z), ufuncs.imag(z)
    else:
        if not _dtypes.is_inexact(dt):
            dt = _dtypes.to_inexact_dtype(dt)
            z = util.convert_element_type(z, dt, z.weak_type)
        re, im = z, creation.zeros_like(z)
    out = ufuncs.arctan2(im, re)
    return rad2deg(out) if deg else out


def ldexp(x1, x2, /):
    util.check_arraylike("ldexp", x1, x2)
    x1 = util.asarray_like(x1)
    if _dtypes.is_integer(getattr(x1, "dtype", np.int32)) or _dtypes.is_bool(x1.dtype):
        x1 = util.promote_dtypes_inexact(x1)[0]
    x2 = util.asarray_like(x2)
    if not (_dtypes.is_integer(x2.dtype) or _dtypes.is_bool(x2.dtype)):
        raise ValueError(f"ldexp: x2 must be integer, got {x2.dtype}")
    x1, x2 = util.promote_shapes("ldexp", x1, x2)
    scale = ufuncs.exp2(util.convert_element_type(x2, x1.dtype))
    return ufuncs.multiply(x1, scale)


def modf(x, /, out=None):
    del out
    x = util.checked_inexact("modf", x)
    whole = ufuncs.trunc(x)
    return ufuncs.subtract(x, whole), whole


def _int_args(name, x1, x2):
    x1, x2 = util.promote_args(name, x1, x2)
    if not (_dtypes.is_integer(x1.dtype) or _dtypes.is_bool(x1.dtype)):
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    return manipulation.broadcast_to(x1, shape), manipulation.broadcast_to(x2, shape)


def gcd(x1, x2, /):
    from morphax._src.higher_order.while_loop import while_loop  # noqa: PLC0415

    x1, x2 = _int_args("gcd", x1, x2)
    a, b = ufuncs.abs(x1), ufuncs.abs(x2)

    def cond(c):
        return reductions.any(ufuncs.not_equal(c[1], 0))

    def body(c):
        a, b = c
        nz = ufuncs.not_equal(b, 0)
        safe_b = ufuncs.where(nz, b, creation.ones_like(b))
        return ufuncs.where(nz, b, a), ufuncs.where(nz, ufuncs.remainder(a, safe_b), creation.zeros_like(b))

    return while_loop(cond, body, (a, b))[0]


def lcm(x1, x2, /):
    x1, x2 = _int_args("lcm", x1, x2)
    d = gcd(x1, x2)
    zero = ufuncs.equal(d, 0)
    safe = ufuncs.where(zero, creation.ones_like(d), d)
    out = ufuncs.multiply(ufuncs.abs(x1), ufuncs.floor_divide(ufuncs.abs(x2), safe))
    return ufuncs.where(zero, creation.zeros_like(d), out)


def frexp(x, /):
    x = util.checked_inexact("frexp", x)
    if _dtypes.is_complex(x.dtype):
        raise TypeError("frexp does not support complex-valued inputs")
    return _frexp(x)


def _frexp_impl(x):
    dt = np.dtype(x.dtype)
    info = np.finfo(dt)
    int_dt = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
    nmant = info.nmant
    sub = ufuncs.less(ufuncs.abs(x), info.tiny)
    xn = ufuncs.where(sub, ufuncs.multiply(x, util.convert_element_type(2.0**nmant, dt)), x)
    bits = L.bitcast_convert_type(xn, int_dt)
    mask = (1 << (info.nexp)) - 1
    exp_bits = ufuncs.bitwise_and(ufuncs.right_shift(bits, nmant), mask)
    bias = info.maxexp - 1
    e = ufuncs.subtract(exp_bits, bias - 1)
    e = ufuncs.where(sub, ufuncs.subtract(e, nmant), e)
    clear = ~(mask << nmant)
    new_bits = ufuncs.bitwise_or(
        ufuncs.bitwise_and(bits, util.convert_element_type(clear, int_dt)), (bias - 1) << nmant
    )
    m = L.bitcast_convert_type(new_bits, dt)
    special = ufuncs.logical_or(ufuncs.equal(x, 0), ufuncs.logical_not(ufuncs.isfinite(x)))
    m = ufuncs.where(special, x, m)
    e = ufuncs.where(special, creation.zeros_like(e), e)
    return m, util.convert_element_type(e, np.int32)


def _frexp_jvp(primals, tangents):
    # The mantissa is x * 2**-e with e piecewise constant (the bit manipulation has no derivative).
    (x,), (t,) = primals, tangents
    m, e = _frexp(x)
    scale = ufuncs.exp2(util.convert_element_type(ufuncs.negative(e), t.dtype))
    return (m, e), (ufuncs.multiply(t, scale), None)


_frexp = custom_jvp(_frexp_impl)


_frexp.defjvp(_frexp_jvp)


def spacing(x, /):
    x = util.checked_inexact("spacing", x)
    if _dtypes.is_complex(x.dtype):
        raise TypeError("spacing does not support complex-valued inputs")
    inf = util.convert_element_type(np.inf, x.dtype)
    toward = ufuncs.where(ufuncs.signbit(x), ufuncs.negative(inf), inf)
    return ufuncs.subtract(ufuncs.nextafter(x, toward), x)


def i0(x):
    """Modified Bessel function of order 0: power series for |x| <= 15, asymptotic series beyond."""
    x = util.checked_inexact("i0", x)
    if _dtypes.is_complex(x.dtype):
        raise ValueError("i0 does not support complex dtypes")
    ax = ufuncs.abs(x)
    small = ufuncs.less_equal(ax, 15.0)
    xs = ufuncs.where(small, ax, creation.zeros_like(ax))
    q = ufuncs.square(ufuncs.multiply(xs, 0.5))
    term = creation.ones_like(ax)
    total = term
    for k in range(1, 45):
        term = ufuncs.multiply(term, ufuncs.divide(q, float(k * k)))
        total = ufuncs.add(total, term)
    xl = ufuncs.where(small, creation.full_like(ax, 16.0), ax)
    t = creation.ones_like(ax)
    acc = t
    for k in range(1, 12):
        t = ufuncs.multiply(t, ufuncs.divide(float((2 * k - 1) ** 2), ufuncs.multiply(xl, 8.0 * k)))
        acc = ufuncs.add(acc, t)
    big = ufuncs.multiply(ufuncs.divide(ufuncs.exp(xl), ufuncs.sqrt(ufuncs.multiply(xl, 2 * np.pi))), acc)
    return ufuncs.where(small, total, big)
