"""Statistics (average, median, quantile, percentile and their nan* forms, nanvar/nanstd,
nancumsum/nancumprod, cov, corrcoef), composed from existing jnp/lax functions so they trace under
jit/grad/vmap."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, manipulation, reductions, rounding, ufuncs, util
from morphax._src.prims import lax_api as L

__all__ = [
    "average", "median", "quantile", "percentile", "nanquantile", "nanpercentile", "nanmedian",
    "nanstd", "nanvar", "nancumsum", "nancumprod", "cov", "corrcoef",
]  # fmt: skip


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        a = util.checked_inexact("average", a)
        avg = reductions.mean(a, axis=axis, keepdims=keepdims)
        if axis is None:
            wsum = util.convert_element_type(a.size, avg.dtype)
        else:
            axes = util.canonicalize_axes(axis, a.ndim, "average")
            wsum = util.convert_element_type(int(np.prod([a.shape[i] for i in axes])), avg.dtype)
        wsum = manipulation.broadcast_to(wsum, avg.shape)
    else:
        util.check_arraylike("average", a, weights)
        a, weights = util.promote_dtypes_inexact(a, weights)
        if a.shape != weights.shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            axes = util.canonicalize_axes(axis, a.ndim, "average")
            if weights.ndim != len(axes) or tuple(a.shape[i] for i in axes) != weights.shape:
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            shape = tuple(a.shape[i] if i in axes else 1 for i in range(a.ndim))
            weights = L.broadcast_in_dim(weights, a.shape, axes) if shape else weights
        wsum = reductions.sum(weights, axis=axis, keepdims=keepdims)
        avg = ufuncs.divide(reductions.sum(ufuncs.multiply(a, weights), axis=axis, keepdims=keepdims), wsum)
    if returned:
        if avg.shape != wsum.shape:
            wsum = manipulation.broadcast_to(wsum, avg.shape)
        return avg, wsum
    return avg


def _quantile(name, a, q, axis, method, keepdims, squash_nans):
    util.check_arraylike(name, a, q)
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"{name}: method={method!r} not recognized")
    # As JAX: the result has a's inexact dtype whatever q's (a float64 q, or a Python float that
    # would widen an int32 `a` to float64 in x64 mode, does not change it).
    (a,) = util.promote_dtypes_inexact(a)
    (q,) = util.promote_dtypes_inexact(q)
    q = util.convert_element_type(q, a.dtype)
    if _dtypes.is_complex(a.dtype):
        raise ValueError(f"{name} does not support complex input")
    a = util.asarray_like(a)
    q = util.asarray_like(q)
    if q.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
    nd = a.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = util.canonicalize_axes(axis, nd, name)
    keep = [i for i in range(nd) if i not in axes]
    a = manipulation.transpose(a, tuple(keep) + axes)
    kept_shape = tuple(a.shape[: len(keep)])
    a = manipulation.reshape(a, kept_shape + (int(np.prod([a.shape[i] for i in range(len(keep), nd)])),))
    last = a.ndim - 1
    a = L.sort(a, dimension=last)  # NaNs sort last
    n = a.shape[last]
    if squash_nans:
        counts = reductions.sum(ufuncs.logical_not(ufuncs.isnan(a)), axis=last, keepdims=True)
        counts = util.convert_element_type(counts, a.dtype)
    else:
        counts = util.convert_element_type(n, a.dtype)
        has_nan = reductions.any(ufuncs.isnan(a), axis=last, keepdims=True)
    qe = manipulation.reshape(q, q.shape + (1,) * a.ndim)
    pos = ufuncs.multiply(qe, ufuncs.subtract(counts, 1))
    lo = ufuncs.clip(ufuncs.floor(pos), 0, n - 1)
    hi = ufuncs.clip(ufuncs.ceil(pos), 0, n - 1)
    frac = ufuncs.subtract(pos, lo)
    if method == "lower":
        idx = [lo]
    elif method == "higher":
        idx = [hi]
    elif method == "nearest":
        idx = [ufuncs.clip(rounding.round(pos), 0, n - 1)]
    else:
        idx = [lo, hi]
    ab = manipulation.broadcast_to(a, q.shape + a.shape)
    vals = []
    for ix in idx:
        ii = util.convert_element_type(ix, np.int32)
        ii = manipulation.broadcast_to(ii, q.shape + a.shape[:-1] + (1,))
        vals.append(manipulation.squeeze(_take_last(ab, ii), axis=-1))
    frac = manipulation.squeeze(manipulation.broadcast_to(frac, q.shape + a.shape[:-1] + (1,)), axis=-1)
    if method == "linear":
        out = ufuncs.add(vals[0], ufuncs.multiply(ufuncs.subtract(vals[1], vals[0]), frac))
    elif method == "midpoint":
        out = ufuncs.multiply(ufuncs.add(vals[0], vals[1]), 0.5)
    else:
        out = vals[0]
    if squash_nans:
        allnan = manipulation.squeeze(ufuncs.equal(counts, 0), axis=-1)
        out = ufuncs.where(allnan, util.convert_element_type(np.nan, out.dtype), out)
    else:
        hn = manipulation.squeeze(has_nan, axis=-1)
        out = ufuncs.where(hn, util.convert_element_type(np.nan, out.dtype), out)
    if keepdims:
        full = tuple(
            1 if i in axes else a_dim for i, a_dim in enumerate(_orig_shape_hack(keep, axes, kept_shape))
        )
        out = manipulation.reshape(out, q.shape + full)
    return out


def _orig_shape_hack(keep, axes, kept_shape):
    nd = len(keep) + len(axes)
    shape = [1] * nd
    for i, k in enumerate(keep):
        shape[k] = kept_shape[i]
    return shape


def _take_last(a, idx):
    from morphax._src.numpy import indexing  # noqa: PLC0415

    return indexing.take_along_axis(a, idx, axis=-1)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             interpolation=None):  # fmt: skip
    del out, overwrite_input
    if interpolation is not None:
        method = interpolation
    return _quantile("quantile", a, q, axis, method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                interpolation=None):  # fmt: skip
    del out, overwrite_input
    if interpolation is not None:
        method = interpolation
    return _quantile("nanquantile", a, q, axis, method, keepdims, True)


def _pct(q):
    util.check_arraylike("percentile", q)
    (q,) = util.promote_dtypes_inexact(q)
    return ufuncs.divide(q, 100)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               interpolation=None):  # fmt: skip
    return quantile(a, _pct(q), axis=axis, method=interpolation or method, keepdims=keepdims)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  interpolation=None):  # fmt: skip
    return nanquantile(a, _pct(q), axis=axis, method=interpolation or method, keepdims=keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    del out
    a = util.checked_array("nanvar", a)
    if not _dtypes.is_inexact(a.dtype):
        return reductions.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    ok = ufuncs.logical_not(ufuncs.isnan(a))
    if where is not None:
        ok = ufuncs.logical_and(ok, where)
    mu = reductions.mean(a, axis=axis, keepdims=True, where=ok)
    centered = ufuncs.subtract(ufuncs.where(ok, a, mu), mu)
    sq = ufuncs.real(ufuncs.multiply(centered, ufuncs.conj(centered)))
    cnt = reductions.sum(ok, axis=axis, keepdims=keepdims)
    denom = ufuncs.maximum(ufuncs.subtract(cnt, ddof), 0)
    tot = reductions.sum(sq, axis=axis, keepdims=keepdims)
    out = ufuncs.divide(tot, util.convert_element_type(denom, tot.dtype))
    if dtype is not None:
        out = util.convert_element_type(out, dtype)
    return out


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    return ufuncs.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where))


def _nan_fill(name, a, fill):
    a = util.checked_array(name, a)
    if _dtypes.is_inexact(a.dtype):
        a = ufuncs.where(ufuncs.isnan(a), util.convert_element_type(fill, a.dtype), a)
    return a


def nancumsum(a, axis=None, dtype=None, out=None):
    return reductions.cumsum(_nan_fill("nancumsum", a, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    return reductions.cumprod(_nan_fill("nancumprod", a, 1), axis=axis, dtype=dtype)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    util.check_arraylike("cov", m)
    m = manipulation.atleast_2d(util.checked_inexact("cov", m))
    if not rowvar and m.shape[0] != 1:
        m = manipulation.transpose(m)
    if y is not None:
        y = manipulation.atleast_2d(util.checked_inexact("cov", y))
        if not rowvar and y.shape[0] != 1:
            y = manipulation.transpose(y)
        m, y = util.promote_dtypes(m, y)
        m = manipulation.concatenate([m, y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = m.shape[1]
    w = None
    if fweights is not None:
        w = util.convert_element_type(util.checked_array("cov", fweights), m.dtype)
    if aweights is not None:
        aw = util.convert_element_type(util.checked_array("cov", aweights), m.dtype)
        w = aw if w is None else ufuncs.multiply(w, aw)
    if w is None:
        avg = reductions.mean(m, axis=1)
        w_sum = util.convert_element_type(n, avg.dtype)
        fact = util.convert_element_type(n - ddof, m.dtype)
    else:
        avg = ufuncs.divide(reductions.sum(ufuncs.multiply(m, w), axis=1), reductions.sum(w))
        w_sum = reductions.sum(w)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = ufuncs.subtract(w_sum, ddof)
        else:
            aw = util.convert_element_type(util.checked_array("cov", aweights), m.dtype)
            fact = ufuncs.subtract(
                w_sum, ufuncs.divide(ufuncs.multiply(ddof, reductions.sum(ufuncs.multiply(w, aw))), w_sum)
            )
    x = ufuncs.subtract(m, avg[:, None])
    xw = x if w is None else ufuncs.multiply(x, w)
    c = ufuncs.divide(L.dot(xw, ufuncs.conj(manipulation.transpose(x))), fact)
    return manipulation.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return ufuncs.divide(c, c)
    d = _diag(c)
    sd = ufuncs.sqrt(d)
    c = ufuncs.divide(c, sd[:, None])
    c = ufuncs.divide(c, sd[None, :])
    if _dtypes.is_complex(c.dtype):
        return L.complex(ufuncs.clip(ufuncs.real(c), -1, 1), ufuncs.clip(ufuncs.imag(c), -1, 1))
    return ufuncs.clip(c, -1, 1)


def _diag(c):
    n = c.shape[0]
    eye = creation.eye(n, dtype=np.bool_)
    return reductions.sum(ufuncs.where(eye, c, creation.zeros_like(c)), axis=1)
