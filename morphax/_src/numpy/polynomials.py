"""Polynomials on coefficient arrays, highest power first as NumPy orders them: polyval, polyadd,
polysub, polymul, polyder, polyint, polydiv, poly, polyfit, roots and vander. Functions whose output
size depends on values (trimming zeros, roots) read them on the host and say so when traced."""

from __future__ import annotations

import math
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    creation,
    linalg,
    manipulation,
    products,
    reductions,
    ufuncs,
    util,
)

__all__ = [
    "polyval",
    "polyadd",
    "polysub",
    "polymul",
    "polyder",
    "polyint",
    "polydiv",
    "poly",
    "polyfit",
    "roots",
    "vander",
]


def _shape(x):
    return tuple(np.shape(x))


def _is_concrete(*xs):
    return not any(isinstance(x, Tracer) for x in xs)


def _poly1d(name, *args, inexact=False):
    util.check_arraylike(name, *args)
    out = util.promote_dtypes_inexact(*args) if inexact else util.promote_dtypes(*args)
    for a in out:
        if len(_shape(a)) != 1:
            raise ValueError(f"{name}: input must be one-dimensional, got shape {_shape(a)}")
    return out


def _zeros(n, dtype):
    return creation.zeros((n,), dtype=dtype)


def _pad_front(a, n):
    if n == 0:
        return a
    return manipulation.concatenate([_zeros(n, a.dtype), a])


def _convolve_full(a, b):
    """Full 1-D convolution as a sum of shifted, scaled copies (static lengths)."""
    m = _shape(a)[0]
    out = None
    for i in range(m):
        term = ufuncs.multiply(a[i], b)
        parts = [p for p in (_zeros(i, term.dtype), term, _zeros(m - 1 - i, term.dtype)) if _shape(p)[0]]
        term = manipulation.concatenate(parts) if len(parts) > 1 else parts[0]
        out = term if out is None else ufuncs.add(out, term)
    return out


def _trim_leading_zeros(a):
    if not _is_concrete(a):
        raise ValueError("trim_leading_zeros=True requires concrete (non-traced) input")
    host = np.asarray(a)
    nz = np.flatnonzero(host)
    start = int(nz[0]) if nz.size else _shape(a)[0] - 1
    return a[start:] if _shape(a)[0] else a


def polyval(p, x, *, unroll: int = 16):
    """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x`` (Horner)."""
    del unroll
    util.check_arraylike("polyval", p, x)
    p, x = util.promote_dtypes(p, x)  # as in JAX: integer inputs give an integer result
    if len(_shape(p)) < 1:
        raise ValueError("polyval: p must have at least one dimension")
    y = creation.zeros_like(x, shape=manipulation.broadcast_shapes(_shape(p)[1:], _shape(x)))
    for i in range(_shape(p)[0]):
        y = ufuncs.add(ufuncs.multiply(y, x), p[i])
    return y


def _polyaddsub(name, op, a1, a2):
    a1, a2 = _poly1d(name, a1, a2)
    n1, n2 = _shape(a1)[0], _shape(a2)[0]
    n = max(n1, n2)
    return op(_pad_front(a1, n - n1), _pad_front(a2, n - n2))


def polyadd(a1, a2):
    """Sum of two polynomials."""
    return _polyaddsub("polyadd", ufuncs.add, a1, a2)


def polysub(a1, a2):
    """Difference of two polynomials."""
    return _polyaddsub("polysub", ufuncs.subtract, a1, a2)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """Product of two polynomials."""
    a1, a2 = _poly1d("polymul", a1, a2, inexact=True)
    if trim_leading_zeros and _shape(a1)[0] > 1:
        a1 = _trim_leading_zeros(a1)
    if trim_leading_zeros and _shape(a2)[0] > 1:
        a2 = _trim_leading_zeros(a2)
    if _shape(a1)[0] == 0:
        a1 = _zeros(1, a1.dtype)
    if _shape(a2)[0] == 0:
        a2 = _zeros(1, a2.dtype)
    return _convolve_full(a1, a2)


def polyder(p, m: int = 1):
    """The ``m``-th derivative of a polynomial."""
    (p,) = _poly1d("polyder", p, inexact=True)
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    for _ in range(m):
        n = _shape(p)[0]
        if n <= 1:
            return _zeros(0, p.dtype)
        coef = creation.arange(n - 1, 0, -1, dtype=p.dtype)
        p = ufuncs.multiply(p[:-1], coef)
    return p


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    (p,) = _poly1d("polyint", p, inexact=True)
    if k is None:
        k = _zeros(m, p.dtype)
    k = manipulation.atleast_1d(creation.asarray(k))
    if _shape(k)[0] == 1 and m > 1:
        k = manipulation.broadcast_to(k, (m,))
    if _shape(k)[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    k = util.convert_element_type(k, p.dtype)
    for i in range(m):
        n = _shape(p)[0]
        p = manipulation.concatenate(
            [ufuncs.divide(p, creation.arange(n, 0, -1, dtype=p.dtype)), manipulation.reshape(k[i], (1,))]
        )
    return p


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """Quotient and remainder of polynomial division (remainder keeps ``u``'s length)."""
    u, v = _poly1d("polydiv", u, v, inexact=True)
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    scale = ufuncs.divide(1.0, v[0])
    q = []
    for k in range(0, m - n + 1):
        d = ufuncs.multiply(scale, u[k])
        q.append(d)
        seg = ufuncs.subtract(u[k : k + n + 1], ufuncs.multiply(d, v))
        parts = [u[:k], seg, u[k + n + 1 :]]
        u = manipulation.concatenate([p for p in parts if _shape(p)[0]])
    q = manipulation.stack(q) if q else _zeros(1, u.dtype)
    if trim_leading_zeros:
        if not _is_concrete(u):
            raise ValueError("trim_leading_zeros=True requires concrete (non-traced) input")
        host = np.asarray(u)
        tol = math.sqrt(float(np.finfo(host.dtype).eps))
        idx = np.flatnonzero(np.abs(host) > tol)
        u = u[int(idx[0]) :] if idx.size else u[-1:]
    return q, u


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (or a square matrix's eigenvalues)."""
    util.check_arraylike("poly", seq_of_zeros)
    (seq,) = util.promote_dtypes_inexact(seq_of_zeros)
    sh = _shape(seq)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        seq = linalg.eigvals(seq)
    elif len(sh) == 1:
        pass
    elif len(sh) == 0 or (len(sh) == 2 and sh[0] == 0):
        return creation.ones((1,), dtype=seq.dtype)
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    a = creation.ones((1,), dtype=seq.dtype)
    for k in range(_shape(seq)[0]):
        a = _convolve_full(
            a, manipulation.stack([creation.ones((), dtype=seq.dtype), ufuncs.negative(seq[k])])
        )
    return a


def _vander(x, n):
    cols = []
    col = creation.ones_like(x)
    for _ in range(n):
        cols.append(col)
        col = ufuncs.multiply(col, x)
    return manipulation.stack(cols[::-1], axis=1)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """Least-squares polynomial fit (coefficients highest degree first)."""
    util.check_arraylike("polyfit", x, y)
    deg = int(deg)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    x, y = util.promote_dtypes_inexact(x, y)
    if len(_shape(x)) != 1:
        raise TypeError("expected 1D vector for x")
    if _shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if len(_shape(y)) not in (1, 2):
        raise TypeError("expected 1D or 2D array for y")
    if _shape(x)[0] != _shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    order = deg + 1
    if rcond is None:
        rcond = _shape(x)[0] * float(np.finfo(np.dtype(_dtypes.real_dtype(x.dtype))).eps)
    lhs = _vander(x, order)
    rhs = y
    if w is not None:
        util.check_arraylike("polyfit", w)
        (w,) = util.promote_dtypes_inexact(w)
        if len(_shape(w)) != 1 or _shape(w)[0] != _shape(x)[0]:
            raise TypeError("expected a 1-d weight vector of the same length as x")
        lhs = ufuncs.multiply(lhs, w[:, None])
        rhs = ufuncs.multiply(rhs, w if len(_shape(rhs)) == 1 else w[:, None])
    scale = ufuncs.sqrt(reductions.sum(ufuncs.multiply(lhs, ufuncs.conjugate(lhs)).real, axis=0))
    scale = util.convert_element_type(scale, lhs.dtype)
    lhs = ufuncs.divide(lhs, scale[None, :])
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = ufuncs.divide(c, scale if len(_shape(c)) == 1 else scale[:, None])
    if full:
        return c, resids, rank, s, creation.asarray(rcond)
    if cov:
        vbase = linalg.inv(products.dot(ufuncs.conjugate(lhs).T, lhs))
        vbase = ufuncs.divide(vbase, products.outer(scale, scale))
        if cov == "unscaled":
            fac = creation.asarray(1.0, dtype=_dtypes.real_dtype(x.dtype))
        else:
            if _shape(x)[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = ufuncs.divide(resids, _shape(x)[0] - order)
            if len(_shape(y)) == 1:
                fac = fac[0]
        if len(_shape(y)) == 1:
            return c, ufuncs.multiply(vbase, fac)
        return c, ufuncs.multiply(vbase[:, :, None], fac)
    return c


def roots(p, *, strip_zeros: bool = True):
    """Roots of a polynomial via the eigenvalues of its companion matrix (complex result)."""
    (p,) = _poly1d("roots", p, inexact=True)
    num_trailing = 0
    if strip_zeros:
        if not _is_concrete(p):
            raise ValueError(
                "roots with strip_zeros=True requires a concrete (non-traced) input; "
                "pass strip_zeros=False to use it under jit"
            )
        host = np.asarray(p)
        nz = np.flatnonzero(host)
        if nz.size == 0:
            return creation.zeros((0,), dtype=_dtypes.to_complex_dtype(p.dtype))
        p = p[int(nz[0]) : int(nz[-1]) + 1]
        num_trailing = _shape(host)[0] - int(nz[-1]) - 1
    n = _shape(p)[0]
    cdt = _dtypes.to_complex_dtype(p.dtype)
    if n < 2:
        r = creation.zeros((0,), dtype=cdt)
    else:
        first = ufuncs.divide(ufuncs.negative(p[1:]), p[0])[None, :]
        if n > 2:
            rest = manipulation.concatenate(
                [creation.eye(n - 2, dtype=p.dtype), creation.zeros((n - 2, 1), dtype=p.dtype)], axis=1
            )
            a = manipulation.concatenate([first, rest], axis=0)
        else:
            a = first
        r = util.convert_element_type(linalg.eigvals(a), cdt)
    if num_trailing:
        r = manipulation.concatenate([r, creation.zeros((num_trailing,), dtype=cdt)])
    return r


def vander(x, N=None, increasing=False):  # noqa: N803 - NumPy's name
    """Vandermonde matrix of 1-D `x` with `N` columns."""
    x = util.checked_array("vander", x)
    if len(x.shape) != 1:
        raise ValueError("x must be a one-dimensional array")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("N must be nonnegative")
    p = np.arange(n, dtype=np.int32)
    if not increasing:
        p = p[::-1].copy()
    (x,) = util.promote_dtypes(x)
    base, expo = manipulation.broadcast_arrays(x[:, None], creation.asarray(p).astype(x.dtype)[None, :])
    return ufuncs.power(base, expo)
