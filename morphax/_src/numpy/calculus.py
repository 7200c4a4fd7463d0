"""Numerical calculus on sampled data: diff, ediff1d, gradient (second-order central differences),
trapezoid, unwrap, interp and cross."""

from __future__ import annotations

import numpy as np

from morphax._src.numpy import creation, manipulation, reductions, ufuncs, util
from morphax._src.prims import lax_api as L

__all__ = ["diff", "ediff1d", "trapezoid", "cross", "unwrap", "interp", "gradient"]


def _slice_axis(a, start, stop, axis):
    return L.slice_in_dim(a, start, stop, axis=axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = util.checked_array("diff", a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = util.canonicalize_axis(axis, a.ndim, "diff")

    def _edge(extra):
        e = util.checked_array("diff", extra)
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
    ary = manipulation.ravel(util.checked_array("ediff1d", ary))
    n = ary.shape[0]
    out = ufuncs.subtract(_slice_axis(ary, 1, n, 0), _slice_axis(ary, 0, max(n - 1, 0), 0))
    parts = []
    if to_begin is not None:
        parts.append(
            util.convert_element_type(manipulation.ravel(util.checked_array("ediff1d", to_begin)), out.dtype)
        )
    parts.append(out)
    if to_end is not None:
        parts.append(
            util.convert_element_type(manipulation.ravel(util.checked_array("ediff1d", to_end)), out.dtype)
        )
    return manipulation.concatenate(parts) if len(parts) > 1 else out


def trapezoid(y, x=None, dx=1.0, axis=-1):
    if x is None:
        util.check_arraylike("trapezoid", y)
        (y,) = util.promote_dtypes_inexact(y)
        if not isinstance(dx, (int, float)):
            dx = util.checked_inexact("trapezoid", dx)
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


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    p = util.checked_inexact("unwrap", p)
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
    f = util.checked_inexact("gradient", f)
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
            h = h if isinstance(h, (int, float)) else util.checked_inexact("gradient", h)
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
