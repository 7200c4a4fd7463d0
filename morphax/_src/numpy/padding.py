"""jnp.pad: NumPy's padding modes (constant, edge, reflect, symmetric, wrap, linear_ramp, the
statistic modes, empty) and pad_width forms, with static widths, composed from gathers and
concatenations so it works under jit, grad and vmap."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.trace import Tracer
from morphax._src.numpy import creation, indexing, manipulation, reductions, rounding, ufuncs, util
from morphax._src.prims import lax_api as L

__all__ = ["pad"]


def _arr(fun_name, x):
    util.check_arraylike(fun_name, x)
    return util.asarray_like(x)


def _pad_pairs(value, nd, name, as_int=True):
    v = np.asarray(value)
    if as_int:
        if v.dtype.kind not in "iub":
            raise TypeError(f"`{name}` must be of integral type.")
        v = v.astype(np.int64)
    try:
        return np.broadcast_to(v, (nd, 2)) if v.ndim < 2 or v.shape != (nd, 2) else v
    except ValueError:
        raise ValueError(f"jnp.pad: `{name}` of shape {v.shape} cannot broadcast to ({nd}, 2)") from None


def _slice_axis(x, axis, idx):
    return indexing.take(x, creation.asarray(np.asarray(idx, np.int32)), axis=axis)


def _pad_index(mode, n, before, after, reflect):
    i = np.arange(-before, n + after)
    if mode == "wrap":
        return i % n
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "symmetric":
        j = i % (2 * n)
        return np.where(j >= n, 2 * n - 1 - j, j)
    # reflect
    if n == 1:
        return np.zeros_like(i)
    period = 2 * (n - 1)
    j = i % period
    return np.where(j >= n, period - j, j)


def _pad_reflect_odd(x, ax, before, after, include_edge):
    """NumPy's odd reflection: chunks of at most the original period, each reflected through the
    current edge (2 * edge - mirror), repeated until the pad widths are filled."""
    n = x.shape[ax]
    eo = 1 if include_edge else 0
    while before > 0 or after > 0:
        length = x.shape[ax]
        if include_edge:
            old = length // n * n
        else:
            old = (length - 1) // (n - 1) * (n - 1)
        if before > 0:
            chunk = min(old, before)
            mirror = _slice_axis(x, ax, np.arange(chunk - eo, -eo, -1))
            x = manipulation.concatenate([2 * _slice_axis(x, ax, [0]) - mirror, x], axis=ax)
            before -= chunk
        if after > 0:
            chunk = min(old, after)
            last = x.shape[ax] - 1
            mirror = _slice_axis(x, ax, np.arange(last - 1 + eo, last - 1 + eo - chunk, -1))
            x = manipulation.concatenate([x, 2 * _slice_axis(x, ax, [last]) - mirror], axis=ax)
            after -= chunk
    return x


def _const_block(x, axis, width, value):
    shape = list(x.shape)
    shape[axis] = width
    return manipulation.broadcast_to(creation.asarray(value).astype(x.dtype), tuple(shape))


def _median_keepdims(part, axis, keepdims=True):
    m = part.shape[axis]
    srt = L.sort(part, dimension=axis)
    lo = _slice_axis(srt, axis, [(m - 1) // 2])
    hi = _slice_axis(srt, axis, [m // 2])
    (lo, hi) = util.promote_dtypes_inexact(lo, hi)
    return (lo + hi) / 2


def _pad_stat(fn, part, ax, mode, dtype):
    r = fn(part, axis=ax, keepdims=True)
    if mode in ("mean", "median") and not _dtypes.issubdtype(dtype, np.inexact):
        r = rounding.round(r)
    return r.astype(dtype)


def pad(array, pad_width, mode="constant", **kwargs):
    """`array` padded by `pad_width` along each axis (NumPy's modes and pad_width forms)."""
    x = _arr("pad", array)
    nd = len(x.shape)
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not supported")
    modes = ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum", "minimum",
             "mean", "median", "empty")  # fmt: skip
    if mode not in modes:
        raise ValueError(f"Unimplemented padding mode '{mode}' for np.pad.")
    allowed = {
        "constant": {"constant_values"}, "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
        "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"},
        "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    }.get(mode, set())  # fmt: skip
    bad = set(kwargs) - allowed
    if bad:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {sorted(bad)}")
    if isinstance(pad_width, Tracer):
        raise ValueError("jnp.pad: pad_width must be static (concrete)")
    widths = _pad_pairs(np.asarray(pad_width), nd, "pad_width")
    if np.any(widths < 0):
        raise ValueError("index can't contain negative values")
    if nd == 0:
        return x
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type}")
    cv = None
    if mode == "constant":
        cv = kwargs.get("constant_values", 0)
        if not isinstance(cv, Tracer):
            cv = _pad_pairs(np.asarray(cv), nd, "constant_values", False)
        elif cv.ndim:
            raise ValueError("jnp.pad: traced constant_values must be a scalar")
    for ax in range(nd):
        b, a = int(widths[ax, 0]), int(widths[ax, 1])
        if b == 0 and a == 0:
            continue
        n = x.shape[ax]
        if mode in ("constant", "empty"):
            if mode == "empty":
                vb = va = 0
            elif isinstance(cv, Tracer):
                vb = va = cv
            else:
                vb, va = cv[ax, 0], cv[ax, 1]
            x = manipulation.concatenate([_const_block(x, ax, b, vb), x, _const_block(x, ax, a, va)], axis=ax)
            continue
        if n == 0:
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        if reflect_type == "odd" and mode in ("reflect", "symmetric") and n > 1:
            x = _pad_reflect_odd(x, ax, b, a, mode == "symmetric")
            continue
        if mode in ("edge", "wrap", "reflect", "symmetric"):
            x = _slice_axis(x, ax, _pad_index(mode, n, b, a, reflect_type))
            continue
        if mode == "linear_ramp":
            ev = _pad_pairs(np.asarray(kwargs.get("end_values", 0)), nd, "end_values", False)
            shape_b = [1] * nd
            shape_b[ax] = b
            shape_a = [1] * nd
            shape_a[ax] = a
            first = _slice_axis(x, ax, [0])
            last = _slice_axis(x, ax, [n - 1])
            wdt = x.dtype if _dtypes.issubdtype(x.dtype, np.inexact) else np.float32
            tb = creation.asarray((np.arange(b) / max(b, 1)).reshape(shape_b).astype(wdt))
            ta = creation.asarray((np.arange(a - 1, -1, -1) / max(a, 1)).reshape(shape_a).astype(wdt))
            e0 = creation.asarray(ev[ax, 0]).astype(wdt)
            e1 = creation.asarray(ev[ax, 1]).astype(wdt)
            left = e0 + (first.astype(wdt) - e0) * tb
            right = e1 + (last.astype(wdt) - e1) * ta
            if not _dtypes.issubdtype(x.dtype, np.inexact):
                left, right = ufuncs.floor(left), ufuncs.floor(right)
            x = manipulation.concatenate([left.astype(x.dtype), x, right.astype(x.dtype)], axis=ax)
            continue
        # statistic modes
        sl = kwargs.get("stat_length", None)
        sl = np.full((nd, 2), n) if sl is None else _pad_pairs(np.asarray(sl), nd, "stat_length")
        if np.any(sl < 0):
            raise ValueError("index can't contain negative values")
        lb, la = max(1, min(int(sl[ax, 0]), n)), max(1, min(int(sl[ax, 1]), n))
        fn = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean}.get(
            mode, _median_keepdims
        )

        sb = _pad_stat(fn, _slice_axis(x, ax, np.arange(lb)), ax, mode, x.dtype)
        sa = _pad_stat(fn, _slice_axis(x, ax, np.arange(n - la, n)), ax, mode, x.dtype)
        x = manipulation.concatenate([_const_block(x, ax, b, sb), x, _const_block(x, ax, a, sa)], axis=ax)
    return x
