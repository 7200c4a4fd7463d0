"""Assorted jnp math helpers (angle conversion, predicates, differences, convolution, interp...),
composed from existing jnp/lax functions so they trace under jit/grad/vmap. The statistics
(median, quantile, cov...) live in statistics.py."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, manipulation, reductions, ufuncs, util
from morphax._src.prims import lax_api as L
from morphax._src.runtime.array import Array
from morphax._src.transforms.custom import custom_jvp

__all__ = [
    "deg2rad", "degrees", "rad2deg", "radians", "fabs", "sinc", "nan_to_num", "angle", "iscomplex",
    "iscomplexobj", "isreal", "isrealobj", "isscalar", "iterable", "isdtype", "ldexp", "modf",
    "gcd", "lcm", "diff", "ediff1d", "trapezoid", "cross", "convolve", "correlate", "unwrap", "interp",
    "gradient", "frexp", "spacing", "i0",
]  # fmt: skip


def _arr(name, x):
    util.check_arraylike(name, x)
    return util.asarray_like(x)


def _inexact(name, x):
    util.check_arraylike(name, x)
    return util.promote_dtypes_inexact(x)[0]


# ------------------------------------------------------------------------------- elementwise


def deg2rad(x, /):
    x = _inexact("deg2rad", x)
    return ufuncs.multiply(x, np.pi / 180)


def rad2deg(x, /):
    x = _inexact("rad2deg", x)
    return ufuncs.multiply(x, 180 / np.pi)


def radians(x, /):
    return deg2rad(x)


def degrees(x, /):
    return rad2deg(x)


def fabs(x, /):
    x = _inexact("fabs", x)
    if _dtypes.is_complex(x.dtype):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return ufuncs.abs(x)


def sinc(x, /):
    x = _inexact("sinc", x)
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
    x = _arr("nan_to_num", x)
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
    z = _arr("angle", z)
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


def iscomplexobj(x):
    if x is None:
        return False
    try:
        dt = x.dtype
    except AttributeError:
        dt = np.asarray(x).dtype
    return np.issubdtype(dt, np.complexfloating)


def isrealobj(x):
    return not iscomplexobj(x)


def iscomplex(x):
    x = _arr("iscomplex", x)
    i = ufuncs.imag(x)
    return ufuncs.not_equal(i, creation.zeros_like(i))


def isreal(x):
    x = _arr("isreal", x)
    i = ufuncs.imag(x)
    return ufuncs.equal(i, creation.zeros_like(i))


def isscalar(element):
    from morphax._src.core.trace import Tracer

    if isinstance(element, (Array, Tracer)) or hasattr(element, "__jax_array__"):
        return element.ndim == 0 if hasattr(element, "ndim") else False
    if isinstance(element, (np.ndarray, np.generic)):
        return np.ndim(element) == 0
    return isinstance(element, (bool, int, float, complex))


def iterable(y):
    try:
        iter(y)
    except TypeError:
        return False
    return True


_KIND_CHECKS = {
    "bool": lambda d: d == np.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: np.issubdtype(d, np.floating) or _dtypes.is_inexact(d) and d.kind not in "c",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d != np.bool_,
}


def isdtype(dtype, kind):
    dt = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KIND_CHECKS:
                raise ValueError(f"Unrecognized {k=!r}")
            if _KIND_CHECKS[k](dt):
                return True
        else:
            if np.dtype(k) == dt:
                return True
    return False


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
    x = _inexact("modf", x)
    whole = ufuncs.trunc(x)
    return ufuncs.subtract(x, whole), whole


def _int_args(name, x1, x2):
    x1, x2 = util.promote_args(name, x1, x2)
    if not (_dtypes.is_integer(x1.dtype) or _dtypes.is_bool(x1.dtype)):
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    return manipulation.broadcast_to(x1, shape), manipulation.broadcast_to(x2, shape)


def gcd(x1, x2, /):
    from morphax._src.control_flow.while_loop import while_loop  # noqa: PLC0415

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


# ------------------------------------------------------------------------------- differences


def _slice_axis(a, start, stop, axis):
    return L.slice_in_dim(a, start, stop, axis=axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = _arr("diff", a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = util.canonicalize_axis(axis, a.ndim, "diff")

    def _edge(extra):
        e = _arr("diff", extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = manipulation.broadcast_to(e, tuple(shape))
        return e

    parts = ([_edge(prepend)] if prepend is not None else []) + [a]
    parts += [_edge(append)] if append is not None else []
    if len(parts) > 1:
        a = manipulation.concatenate(parts, axis=axis)
    is_bool = a.dtype == np.bool_
    for _ in range(n):
        m = a.shape[axis]
        hi, lo = _slice_axis(a, 1, m, axis), _slice_axis(a, 0, m - 1, axis)
        a = ufuncs.not_equal(hi, lo) if is_bool else ufuncs.subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    ary = manipulation.ravel(_arr("ediff1d", ary))
    n = ary.shape[0]
    out = ufuncs.subtract(_slice_axis(ary, 1, n, 0), _slice_axis(ary, 0, max(n - 1, 0), 0))
    parts = []
    if to_begin is not None:
        parts.append(util.convert_element_type(manipulation.ravel(_arr("ediff1d", to_begin)), out.dtype))
    parts.append(out)
    if to_end is not None:
        parts.append(util.convert_element_type(manipulation.ravel(_arr("ediff1d", to_end)), out.dtype))
    return manipulation.concatenate(parts) if len(parts) > 1 else out


def trapezoid(y, x=None, dx=1.0, axis=-1):
    if x is None:
        util.check_arraylike("trapezoid", y)
        (y,) = util.promote_dtypes_inexact(y)
        if not isinstance(dx, (int, float)):
            dx = _inexact("trapezoid", dx)
    else:
        util.check_arraylike("trapezoid", y, x)
        y, x = util.promote_dtypes_inexact(y, x)
        if x.ndim == 1:
            dx = diff(x)
        else:
            dx = manipulation.moveaxis(diff(x, axis=axis), axis, -1)
    y = manipulation.moveaxis(y, axis, -1)
    m = y.shape[-1]
    s = ufuncs.add(_slice_axis(y, 1, m, y.ndim - 1), _slice_axis(y, 0, max(m - 1, 0), y.ndim - 1))
    return ufuncs.multiply(0.5, reductions.sum(ufuncs.multiply(dx, s), axis=-1))


# ------------------------------------------------------------------------------- more numerics


def _take1(a, i, axis):
    """a[..., i:i+1, ...] along `axis` for a static i (negative allowed)."""
    n = a.shape[axis]
    i = i % n
    return L.slice_in_dim(a, i, i + 1, axis=axis)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    util.check_arraylike("cross", a, b)
    a, b = util.promote_dtypes(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = manipulation.moveaxis(a, axisa, -1)
    b = manipulation.moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return ufuncs.subtract(ufuncs.multiply(a[..., 0], b[..., 1]), ufuncs.multiply(a[..., 1], b[..., 0]))
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else creation.zeros_like(a0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if b.shape[-1] == 3 else creation.zeros_like(b0)
    c = manipulation.stack(
        [
            ufuncs.subtract(ufuncs.multiply(a1, b2), ufuncs.multiply(a2, b1)),
            ufuncs.subtract(ufuncs.multiply(a2, b0), ufuncs.multiply(a0, b2)),
            ufuncs.subtract(ufuncs.multiply(a0, b1), ufuncs.multiply(a1, b0)),
        ],
        axis=-1,
    )
    return manipulation.moveaxis(c, -1, axisc)


def _conv(name, a, v, mode, flip, precision, preferred_element_type):
    util.check_arraylike(name, a, v)
    a, v = util.promote_dtypes_inexact(a, v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}.")
    swapped = False
    if v.shape[0] > a.shape[0]:
        a, v = v, a
        swapped = True
    if not flip:
        v = ufuncs.conj(v)
    else:
        v = manipulation.flip(v)
    m = v.shape[0]
    if mode == "valid":
        pad = (0, 0)
    elif mode == "same":
        pad = (m // 2, m - m // 2 - 1)
    elif mode == "full":
        pad = (m - 1, m - 1)
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = L.conv_general_dilated(
        a[None, None, :], v[None, None, :], (1,), [pad], precision=precision,
        preferred_element_type=preferred_element_type,
    )[0, 0]  # fmt: skip
    if swapped and not flip:
        out = ufuncs.conj(manipulation.flip(out))
    return out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    return _conv("convolve", a, v, mode, True, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    return _conv("correlate", a, v, mode, False, precision, preferred_element_type)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    p = _inexact("unwrap", p)
    if p.shape[axis] == 0:
        return p
    axis = util.canonicalize_axis(axis, p.ndim, "unwrap")
    if discont is None:
        discont = period / 2
    interval = period / 2
    dd = diff(p, axis=axis)
    ddmod = ufuncs.subtract(ufuncs.remainder(ufuncs.add(dd, interval), period), interval)
    ddmod = ufuncs.where(
        ufuncs.logical_and(ufuncs.equal(ddmod, -interval), ufuncs.greater(dd, 0)),
        util.convert_element_type(interval, p.dtype), ddmod,
    )  # fmt: skip
    corr = ufuncs.subtract(ddmod, dd)
    corr = ufuncs.where(ufuncs.less(ufuncs.abs(dd), discont), creation.zeros_like(corr), corr)
    n = p.shape[axis]
    rest = ufuncs.add(L.slice_in_dim(p, 1, n, axis=axis), reductions.cumsum(corr, axis=axis))
    return manipulation.concatenate([L.slice_in_dim(p, 0, 1, axis=axis), rest], axis=axis)


def interp(x, xp, fp, left=None, right=None, period=None):
    util.check_arraylike("interp", x, xp, fp)
    if np.ndim(xp) != 1 or np.ndim(fp) != 1:
        raise ValueError("xp and fp must be one-dimensional")
    if np.shape(xp)[0] != np.shape(fp)[0]:
        raise ValueError("xp and fp must be the same length")
    x, xp = util.promote_dtypes_inexact(x, xp)
    (fp,) = util.promote_dtypes_inexact(fp)
    if period is not None:
        period = ufuncs.abs(util.promote_dtypes_inexact(period)[0])
        x = ufuncs.remainder(x, period)
        xp = ufuncs.remainder(xp, period)
        xp, fp = L.sort_key_val(xp, fp)
        xp = manipulation.concatenate([ufuncs.subtract(xp[-1:], period), xp, ufuncs.add(xp[:1], period)])
        fp = manipulation.concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    cnt = reductions.sum(ufuncs.less_equal(xp, x[..., None]), axis=-1)
    i = ufuncs.clip(cnt, 1, n - 1)
    from morphax._src.numpy import indexing  # noqa: PLC0415

    fhi, flo = indexing.take(fp, i), indexing.take(fp, i - 1)
    xhi, xlo = indexing.take(xp, i), indexing.take(xp, i - 1)
    dx = ufuncs.subtract(xhi, xlo)
    zero = ufuncs.equal(dx, 0)
    safe = ufuncs.where(zero, creation.ones_like(dx), dx)
    f = ufuncs.where(
        zero,
        fhi,
        ufuncs.add(
            flo, ufuncs.multiply(ufuncs.divide(ufuncs.subtract(x, xlo), safe), ufuncs.subtract(fhi, flo))
        ),
    )
    if period is None:
        lv = fp[0] if left is None else left
        rv = fp[-1] if right is None else right
        f = ufuncs.where(ufuncs.less(x, xp[0]), lv, f)
        f = ufuncs.where(ufuncs.greater(x, xp[-1]), rv, f)
    return f


def gradient(f, *varargs, axis=None, edge_order=None):
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    f = _inexact("gradient", f)
    axes = util.canonicalize_axes(axis, f.ndim, "gradient") if not isinstance(axis, int) else (
        util.canonicalize_axis(axis, f.ndim, "gradient"),)  # fmt: skip
    if isinstance(axis, (tuple, list)):
        axes = tuple(util.canonicalize_axis(a, f.ndim, "gradient") for a in axis)
    if not axes:
        return []
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("Invalid number of spacing arguments")
    outs = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient")

        def sl(lo, hi, ax=ax):
            return L.slice_in_dim(f, lo, hi, axis=ax)

        bshape = [1] * f.ndim
        bshape[ax] = -1
        if np.ndim(h) == 0:
            h = h if isinstance(h, (int, float)) else _inexact("gradient", h)
            inner = ufuncs.divide(ufuncs.subtract(sl(2, n), sl(0, n - 2)), ufuncs.multiply(h, 2))
            first = ufuncs.divide(ufuncs.subtract(sl(1, 2), sl(0, 1)), h)
            last = ufuncs.divide(ufuncs.subtract(sl(n - 1, n), sl(n - 2, n - 1)), h)
        else:
            (h,) = util.promote_dtypes_inexact(h)
            d = diff(h)
            dx1 = manipulation.reshape(d[:-1], bshape)
            dx2 = manipulation.reshape(d[1:], bshape)
            ca = ufuncs.divide(ufuncs.negative(dx2), ufuncs.multiply(dx1, ufuncs.add(dx1, dx2)))
            cb = ufuncs.divide(ufuncs.subtract(dx2, dx1), ufuncs.multiply(dx1, dx2))
            cc = ufuncs.divide(dx1, ufuncs.multiply(dx2, ufuncs.add(dx1, dx2)))
            inner = ufuncs.add(
                ufuncs.add(ufuncs.multiply(ca, sl(0, n - 2)), ufuncs.multiply(cb, sl(1, n - 1))),
                ufuncs.multiply(cc, sl(2, n)),
            )
            first = ufuncs.divide(ufuncs.subtract(sl(1, 2), sl(0, 1)), d[0])
            last = ufuncs.divide(ufuncs.subtract(sl(n - 1, n), sl(n - 2, n - 1)), d[-1])
        parts = [first, inner, last] if n > 2 else [first, last]
        outs.append(manipulation.concatenate(parts, axis=ax))
    return outs[0] if len(outs) == 1 else outs


def frexp(x, /):
    x = _inexact("frexp", x)
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
    x = _inexact("spacing", x)
    if _dtypes.is_complex(x.dtype):
        raise TypeError("spacing does not support complex-valued inputs")
    inf = util.convert_element_type(np.inf, x.dtype)
    toward = ufuncs.where(ufuncs.signbit(x), ufuncs.negative(inf), inf)
    return ufuncs.subtract(ufuncs.nextafter(x, toward), x)


def i0(x):
    """Modified Bessel function of order 0: power series for |x| <= 15, asymptotic series beyond."""
    x = _inexact("i0", x)
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
