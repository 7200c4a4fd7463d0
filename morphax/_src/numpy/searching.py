"""Sorting, searching, set operations and histograms (`sort`, `argsort`, `searchsorted`,
`nonzero`, `unique`, `bincount`...). Functions whose output shape depends on the data take
``size=`` / ``fill_value=``; without ``size=`` they need concrete inputs."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import creation, indexing, manipulation, reductions, ufuncs, util
from morphax._src.numpy.creation import concrete_value
from morphax._src.prims import lax_api as L

__all__ = [
    "where", "sort", "argsort", "lexsort", "searchsorted", "partition", "argpartition", "nonzero",
    "flatnonzero", "argwhere", "extract", "select", "nanargmax", "nanargmin", "isin", "unique",
    "unique_values", "unique_counts", "unique_inverse", "unique_all", "intersect1d", "union1d",
    "setdiff1d", "setxor1d", "digitize", "bincount", "sort_complex", "piecewise", "histogram",
    "histogram_bin_edges", "histogram2d", "histogramdd",
]  # fmt: skip


def _arr(name, x):
    util.check_arraylike(name, x)
    return util.asarray_like(x)


def _int_dtype():
    return _dtypes.canonicalize_dtype(np.int64)


def _static_size(name, size):
    """The `size=` of the fixed-size variants (nonzero, unique, ...): a static non-negative int."""
    try:
        n = operator.index(size)
    except TypeError as e:
        if type(e) is not TypeError:  # e.g. a concretization error for a traced size: keep it
            raise
        raise TypeError(
            f"jnp.{name}: size must be a static non-negative integer, got {size!r} of type "
            f"{type(size).__name__}. Pass a Python int."
        ) from None
    if n < 0:
        # JAX fails here too (a TypeError from broadcast_in_dim's negative shape), less clearly.
        raise TypeError(
            f"jnp.{name}: size must be a non-negative integer, got size={n}. It is the number of "
            f"entries to return; missing ones are filled with fill_value."
        )
    return n


def _int_dtype_for_dim(n):
    """JAX's index dtype for positions along an axis of size `n`: int32 whenever it can hold n,
    even in x64 mode (so searchsorted/digitize/argpartition stay int32 there, as in JAX)."""
    return np.dtype(np.int32) if n <= np.iinfo(np.int32).max else _int_dtype()


def _prep_axis(name, a, axis):
    a = _arr(name, a)
    if axis is None:
        a = manipulation.ravel(a)
        axis = 0
    return a, util.canonicalize_axis(axis, get_aval(a).ndim, name)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    if order is not None:
        raise TypeError("sort: 'order' argument is not supported.")
    a, axis = _prep_axis("sort", a, axis)
    if get_aval(a).ndim == 0:
        return a
    out = L.sort(a, dimension=axis, is_stable=stable)
    return L.rev(out, (axis,)) if descending else out


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    if order is not None:
        raise TypeError("argsort: 'order' argument is not supported.")
    a, axis = _prep_axis("argsort", a, axis)
    shape = get_aval(a).shape
    idt = _int_dtype()
    if len(shape) == 0:
        return creation.zeros((), idt)
    iota = L.broadcasted_iota(idt, shape, axis)
    if descending:
        n = shape[axis]
        _, idx = L.sort_key_val(L.rev(a, (axis,)), iota, dimension=axis, is_stable=stable)
        return ufuncs.subtract(np.array(n - 1, idt), L.rev(idx, (axis,)))
    _, idx = L.sort_key_val(a, iota, dimension=axis, is_stable=stable)
    return idx


def sort_complex(a):
    a = _arr("sort_complex", a)
    a = sort(a, axis=-1)
    dt = _dtypes.canonicalize_dtype(np.result_type(get_aval(a).dtype, np.complex64))
    return util.convert_element_type(a, dt)


def lexsort(keys, axis=-1):
    keys = tuple(keys)
    if len(keys) == 0:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    keys = [_arr("lexsort", k) for k in keys]
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) > 1:
        raise ValueError("all keys need to be the same shape")
    shape = shapes.pop()
    if len(shape) == 0:
        return creation.zeros((), _int_dtype())
    axis = util.canonicalize_axis(axis, len(shape), "lexsort")
    iota = L.broadcasted_iota(_int_dtype(), shape, axis)
    out = L.sort([*keys[::-1], iota], dimension=axis, is_stable=True, num_keys=len(keys))
    return out[-1]


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    if side not in ("left", "right"):
        raise ValueError(
            f"{side!r} is an invalid value for keyword 'side'. Expected one of ['left', 'right']."
        )
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"invalid argument method={method!r}")
    util.check_arraylike("searchsorted", a, v)
    a, v = util.promote_dtypes(a, v)
    if get_aval(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if sorter is not None:
        a = indexing.take(a, sorter)
    vv = manipulation.expand_dims(v, -1)
    mask = ufuncs.less(a, vv) if side == "left" else ufuncs.less_equal(a, vv)
    if _dtypes.is_floating(get_aval(a).dtype):
        # NaN sorts last: every number is before a NaN query, and a NaN is before (or at) a NaN
        nan_a, nan_v = ufuncs.isnan(a), ufuncs.isnan(vv)
        before = (
            ufuncs.logical_not(nan_a)
            if side == "left"
            else ufuncs.logical_or(ufuncs.logical_not(nan_a), nan_v)
        )
        mask = ufuncs.where(nan_v, before, mask)
    return reductions.sum(mask, axis=-1, dtype=_int_dtype_for_dim(get_aval(a).shape[0]))


def _partition_axis(name, a, kth, axis):
    """Validate `kth` against the axis; returns (array, canonical axis). Sorting the whole axis
    is a valid partition for any kth."""
    a = _arr(name, a)
    shape = get_aval(a).shape
    axis = util.canonicalize_axis(axis, len(shape), name)
    kth = int(kth)
    n = shape[axis]
    if kth < 0:
        kth += n
    if not 0 <= kth < n:
        raise ValueError(f"kth={kth} out of bounds for axis of size {n}")
    return a, axis


def partition(a, kth, axis=-1):
    a, axis = _partition_axis("partition", a, kth, axis)
    return sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    a, axis = _partition_axis("argpartition", a, kth, axis)
    idt = _int_dtype_for_dim(get_aval(a).shape[axis])
    return util.convert_element_type(argsort(a, axis=axis), idt, False)


def _concrete(x, name):
    return np.asarray(concrete_value(x, f"The size argument of jnp.{name} must be statically specified"))


def nonzero(a, *, size=None, fill_value=None):
    a = _arr("nonzero", a)
    shape = get_aval(a).shape
    if len(shape) == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() instead."
        )
    mask = ufuncs.not_equal(a, np.zeros((), get_aval(a).dtype)) if get_aval(a).dtype != np.bool_ else a
    idt = _int_dtype()
    if size is None:
        m = _concrete(mask, "nonzero")
        return tuple(creation.asarray(np.asarray(i, idt)) for i in np.nonzero(m))
    size = _static_size("nonzero", size)
    flat = manipulation.ravel(mask)
    total = get_aval(flat).shape[0]
    order = argsort(ufuncs.logical_not(flat), stable=True)
    if size <= total:
        order = order[:size]
    else:
        order = manipulation.concatenate([order, creation.zeros((size - total,), idt)])
    count = reductions.sum(flat, dtype=idt)
    valid = ufuncs.less(creation.arange(size, dtype=idt), count)
    out = []
    rem = order
    strides = [int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape))]
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"fill_value must be a scalar or a tuple of length {len(shape)}; got {fill_value}")
    for st, fv in zip(strides, fills):
        c = ufuncs.floor_divide(rem, np.array(st, idt))
        rem = ufuncs.remainder(rem, np.array(st, idt))
        fv = 0 if fv is None else fv
        out.append(ufuncs.where(valid, c, util.convert_element_type(fv, idt)))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(manipulation.ravel(_arr("flatnonzero", a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    a = _arr("argwhere", a)
    if get_aval(a).ndim == 0:
        (res,) = nonzero(manipulation.reshape(a, (1,)), size=size, fill_value=fill_value)
        return creation.zeros((get_aval(res).shape[0], 0), _int_dtype())
    res = nonzero(a, size=size, fill_value=fill_value)
    return manipulation.stack(res, axis=-1)


def extract(condition, arr, *, size=None, fill_value=0):
    arr = manipulation.ravel(_arr("extract", arr))
    cond = manipulation.ravel(_arr("extract", condition))
    n = get_aval(arr).shape[0]
    cond = cond[:n] if get_aval(cond).shape[0] >= n else cond
    if get_aval(cond).shape[0] < n:
        arr = arr[: get_aval(cond).shape[0]]
    if size is None:
        (idx,) = nonzero(cond)
        return indexing.take(arr, idx)
    (idx,) = nonzero(cond, size=size, fill_value=-1)
    got = indexing.take(arr, ufuncs.maximum(idx, np.array(0, get_aval(idx).dtype)))
    fv = util.convert_element_type(fill_value, get_aval(arr).dtype)
    return ufuncs.where(ufuncs.less(idx, np.array(0, get_aval(idx).dtype)), fv, got)


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})"
        )
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    choices = util.promote_dtypes(default, *choicelist)
    out = choices[0]
    for c, x in zip(condlist[::-1], choices[1:][::-1]):
        c = _arr("select", c)
        if get_aval(c).dtype != np.bool_:
            raise ValueError("condlist must be a list of boolean arrays")
        out = ufuncs.where(c, x, out)
    return out


def _nanarg(name, fun, fill, a, axis, out, keepdims):
    a = _arr(name, a)
    dt = get_aval(a).dtype
    if not (_dtypes.is_floating(dt) or _dtypes.is_complex(dt)):
        return fun(a, axis=axis, keepdims=keepdims)
    nan = ufuncs.isnan(a)
    res = fun(ufuncs.where(nan, np.array(fill, dt), a), axis=axis, keepdims=keepdims)
    allnan = reductions.all(nan, axis=axis, keepdims=keepdims)
    return ufuncs.where(allnan, np.array(-1, get_aval(res).dtype), res)


def nanargmax(a, axis=None, out=None, keepdims=None):
    return _nanarg("nanargmax", reductions.argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    return _nanarg("nanargmin", reductions.argmin, np.inf, a, axis, out, keepdims)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    util.check_arraylike("isin", element, test_elements)
    e = util.asarray_like(element)
    t = manipulation.ravel(util.asarray_like(test_elements))
    eq = ufuncs.equal(manipulation.expand_dims(e, -1), t)
    res = reductions.any(eq, axis=-1)
    return ufuncs.logical_not(res) if invert else res


def _host_unique(name, ar, axis, equal_nan):
    x = _concrete(ar, name)
    return np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis, equal_nan=equal_nan
    )


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    size=None,
    fill_value=None,
    sorted=True,
):  # noqa: A002
    ar = _arr("unique", ar)
    idt = _int_dtype()
    dt = get_aval(ar).dtype
    if size is None:
        vals, idx, inv, cnt = _host_unique("unique", ar, axis, equal_nan)
        if axis is None:
            inv = inv.reshape(get_aval(ar).shape) if get_aval(ar).ndim else inv.reshape(-1)
        res = [creation.asarray(np.asarray(vals, dt))]
        extras = [(return_index, idx), (return_inverse, inv), (return_counts, cnt)]
    else:
        if axis is not None:
            raise NotImplementedError("unique: size= with axis= is not supported")
        res, extras, _ = _unique_sized(ar, _static_size("unique", size), fill_value)
        extras = list(zip((return_index, return_inverse, return_counts), extras))
        res = [res]
    for flag, v in extras:
        if flag:
            res.append(v if not isinstance(v, np.ndarray) else creation.asarray(np.asarray(v, idt)))
    return res[0] if len(res) == 1 else tuple(res)


def _unique_sized(ar, size, fill_value):
    idt = _int_dtype()
    flat = manipulation.ravel(ar)
    n = get_aval(flat).shape[0]
    perm = argsort(flat)
    s = indexing.take(flat, perm)
    if n == 0:
        raise ValueError("unique: size= requires a non-empty input")
    neq = ufuncs.not_equal(s[1:], s[:-1])
    if _dtypes.is_floating(get_aval(s).dtype) or _dtypes.is_complex(get_aval(s).dtype):
        neq = ufuncs.logical_and(
            neq, ufuncs.logical_not(ufuncs.logical_and(ufuncs.isnan(s[1:]), ufuncs.isnan(s[:-1])))
        )
    first = manipulation.concatenate([np.array([True]), neq])
    (pos,) = nonzero(first, size=size, fill_value=n)
    count = reductions.sum(first, dtype=idt)
    valid = ufuncs.less(creation.arange(size, dtype=idt), count)
    safe = ufuncs.minimum(pos, np.array(n - 1, idt))
    vals = indexing.take(s, safe)
    fv = s[0] if fill_value is None else util.convert_element_type(fill_value, get_aval(s).dtype)
    vals = ufuncs.where(valid, vals, fv)
    index = ufuncs.where(valid, indexing.take(perm, safe), perm[0])
    group = ufuncs.subtract(reductions.cumsum(first, dtype=idt), np.array(1, idt))
    inv_flat = creation.zeros((n,), idt).at[perm].set(group)
    inv = manipulation.reshape(inv_flat, get_aval(ar).shape)
    counts = creation.zeros((size,), idt).at[group].add(np.array(1, idt), mode="drop")
    return vals, [index, inv, counts], valid


def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    return unique(x, return_counts=True, size=size, fill_value=fill_value)


def unique_inverse(x, /, *, size=None, fill_value=None):
    vals, inv = unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return vals, manipulation.reshape(inv, get_aval(_arr("unique_inverse", x)).shape)


def unique_all(x, /, *, size=None, fill_value=None):
    vals, idx, inv, cnt = unique(
        x, return_index=True, return_inverse=True, return_counts=True, size=size, fill_value=fill_value
    )
    return vals, idx, manipulation.reshape(inv, get_aval(_arr("unique_all", x)).shape), cnt


def _host_set(name, fun, *args, **kw):
    arrs = util.promote_dtypes(*[_arr(name, a) for a in args])
    dtype = get_aval(arrs[0]).dtype
    res = fun(*[_concrete(a, name) for a in arrs], **kw)
    if isinstance(res, tuple):
        return (creation.asarray(np.asarray(res[0], dtype)),) + tuple(
            creation.asarray(np.asarray(r, _int_dtype())) for r in res[1:]
        )
    return creation.asarray(np.asarray(res, dtype))


def _sized_select(vals, mask, size, fill_value, default_first):
    """The entries of `vals` where `mask`, padded to `size` with `fill_value`."""
    (idx,) = nonzero(mask, size=size, fill_value=-1)
    idt = get_aval(idx).dtype
    got = indexing.take(vals, ufuncs.maximum(idx, np.array(0, idt)))
    dt = get_aval(vals).dtype
    if fill_value is None:
        fv = got[0] if default_first else np.zeros((), dt)
    else:
        fv = util.convert_element_type(fill_value, dt)
    return ufuncs.where(ufuncs.less(idx, np.array(0, idt)), fv, got)


def _set_args(name, ar1, ar2):
    util.check_arraylike(name, ar1, ar2)
    a, b = util.promote_dtypes(ar1, ar2)
    return manipulation.ravel(a), manipulation.ravel(b)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    if size is None:
        return _host_set(
            "intersect1d",
            np.intersect1d,
            ar1,
            ar2,
            assume_unique=assume_unique,
            return_indices=return_indices,
        )
    if return_indices:
        raise NotImplementedError("intersect1d: return_indices with size= is not supported")
    a, b = _set_args("intersect1d", ar1, ar2)
    u, _, valid = _unique_sized(a, get_aval(a).shape[0], None)
    mask = ufuncs.logical_and(valid, isin(u, b))
    return _sized_select(u, mask, _static_size("intersect1d", size), fill_value, True)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    if size is None:
        return _host_set("union1d", np.union1d, ar1, ar2)
    a, b = _set_args("union1d", ar1, ar2)
    return unique(manipulation.concatenate([a, b]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    if size is None:
        return _host_set("setdiff1d", np.setdiff1d, ar1, ar2, assume_unique=assume_unique)
    a, b = _set_args("setdiff1d", ar1, ar2)
    u, _, valid = _unique_sized(a, get_aval(a).shape[0], None)
    mask = ufuncs.logical_and(valid, isin(u, b, invert=True))
    return _sized_select(u, mask, _static_size("setdiff1d", size), fill_value, False)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    if size is None:
        return _host_set("setxor1d", np.setxor1d, ar1, ar2, assume_unique=assume_unique)
    a, b = _set_args("setxor1d", ar1, ar2)
    c = manipulation.concatenate([a, b])
    u, _, valid = _unique_sized(c, get_aval(c).shape[0], None)
    mask = ufuncs.logical_and(valid, ufuncs.logical_xor(isin(u, a), isin(u, b)))
    return _sized_select(u, mask, _static_size("setxor1d", size), fill_value, True)


def digitize(x, bins, right=False, *, method=None):
    util.check_arraylike("digitize", x, bins)
    x = util.asarray_like(x)
    bins = util.asarray_like(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    n = get_aval(bins).shape[0]
    idt = _int_dtype_for_dim(n)
    if n == 0:
        return creation.zeros(get_aval(x).shape, idt)
    side = "left" if right else "right"
    fwd = searchsorted(bins, x, side=side)
    bwd = ufuncs.subtract(np.array(n, idt), searchsorted(L.rev(bins, (0,)), x, side=side))
    decreasing = ufuncs.less(bins[-1], bins[0])
    return ufuncs.where(decreasing, bwd, fwd)


def bincount(x, weights=None, minlength=0, *, length=None):
    x = _arr("bincount", x)
    if not _dtypes.is_integer(get_aval(x).dtype) and get_aval(x).dtype != np.bool_:
        raise TypeError(f"x argument to bincount must have an integer type; got {get_aval(x).dtype}")
    if get_aval(x).ndim != 1:
        raise ValueError("only 1-dimensional input supported for bincount")
    minlength = int(
        concrete_value(minlength, "The error occurred because of argument 'minlength' of jnp.bincount.")
    )
    if length is None:
        xv = _concrete(x, "bincount")
        length = max(minlength, int(xv.max()) + 1 if xv.size else 0)
    else:
        length = int(
            concrete_value(length, "The error occurred because of argument 'length' of jnp.bincount.")
        )
    if weights is None:
        weights = np.array(1, _int_dtype())
        w = manipulation.broadcast_to(weights, get_aval(x).shape)
    else:
        w = manipulation.broadcast_to(_arr("bincount", weights), get_aval(x).shape)
    xi = util.convert_element_type(x, _int_dtype())
    xi = ufuncs.maximum(xi, np.array(0, _int_dtype()))  # as in JAX, negative values count in bin 0
    return creation.zeros((length,), get_aval(w).dtype).at[xi].add(w, mode="drop")


def piecewise(x, condlist, funclist, *args, **kw):
    x = _arr("piecewise", x)
    dt = get_aval(x).dtype
    if isinstance(condlist, (list, tuple)):
        conds = [_arr("piecewise", c) for c in condlist]
    else:
        c = _arr("piecewise", condlist)
        if get_aval(c).ndim == 0 or get_aval(c).shape == get_aval(x).shape:
            conds = [c]
        else:
            conds = [c[i] for i in builtins.range(get_aval(c).shape[0])]
    funcs = list(funclist)
    nc = len(conds)
    if len(funcs) == nc + 1:
        other = (
            ufuncs.logical_not(
                reductions.any(
                    manipulation.stack([manipulation.broadcast_to(c, get_aval(x).shape) for c in conds]),
                    axis=0,
                )
            )
            if nc
            else creation.ones(get_aval(x).shape, np.bool_)
        )
        conds = conds + [other]
    elif len(funcs) != nc:
        raise ValueError(
            f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {len(funcs)}"
        )
    out = creation.zeros(get_aval(x).shape, dt)
    for c, f in zip(conds, funcs):
        val = f(x, *args, **kw) if callable(f) else f
        val = util.convert_element_type(
            manipulation.broadcast_to(util.asarray_like(val), get_aval(x).shape), dt
        )
        out = ufuncs.where(c, val, out)
    return out


def _bin_edges(name, a, bins, range, dtype):  # noqa: A002
    if not isinstance(bins, (int, np.integer)) and np.ndim(bins) == 1:
        return util.convert_element_type(util.asarray_like(bins), dtype)
    nb = int(concrete_value(bins, f"The error occurred in jnp.{name}: bins must be a concrete int"))
    if nb < 1:
        raise ValueError(f"{name}: `bins` must be positive, when an integer")
    if range is None:
        lo, hi = reductions.min(a), reductions.max(a)
    else:
        lo, hi = range
    lo = util.convert_element_type(util.asarray_like(lo), dtype)
    hi = util.convert_element_type(util.asarray_like(hi), dtype)
    same = ufuncs.equal(lo, hi)
    half = np.array(0.5, dtype)
    lo = ufuncs.where(same, ufuncs.subtract(lo, half), lo)
    hi = ufuncs.where(same, ufuncs.add(hi, half), hi)
    return creation.linspace(lo, hi, nb + 1, dtype=dtype)


def _float_dtype(*xs):
    return get_aval(util.promote_dtypes_inexact(*xs)[0]).dtype


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    a = manipulation.ravel(_arr("histogram_bin_edges", a))
    return _bin_edges("histogram_bin_edges", a, bins, range, _float_dtype(a))


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    a = manipulation.ravel(_arr("histogram", a))
    dt = _float_dtype(a)
    edges = _bin_edges("histogram", a, bins, range, dt)
    if weights is None:
        w = creation.ones(get_aval(a).shape, dt)
    else:
        w = manipulation.ravel(_arr("histogram", weights))
        if get_aval(w).shape != get_aval(a).shape:
            raise ValueError("weights should have the same shape as a.")
        w = util.convert_element_type(w, _float_dtype(w, a))
    ne = get_aval(edges).shape[0]
    af = util.convert_element_type(a, dt)
    idx = searchsorted(edges, af, side="right")
    idx = ufuncs.where(ufuncs.equal(af, edges[-1]), np.array(ne - 1, get_aval(idx).dtype), idx)
    counts = creation.zeros((ne + 1,), get_aval(w).dtype).at[idx].add(w)[1:-1]
    if density:
        widths = ufuncs.subtract(edges[1:], edges[:-1])
        counts = ufuncs.divide(ufuncs.divide(counts, widths), reductions.sum(counts))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    sample = _arr("histogramdd", sample)
    if get_aval(sample).ndim != 2:
        raise ValueError("histogramdd: sample must be a 2D array of shape (N, D)")
    n, d = get_aval(sample).shape
    dt = _float_dtype(sample)
    if weights is None:
        w = creation.ones((n,), get_aval(sample).dtype)
    else:
        w = _arr("histogramdd", weights)
    bins_per = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    if len(bins_per) != d:
        raise ValueError(f"should be a bin for each dimension; got {len(bins_per)} for {d} dimensions")
    ranges = list(range) if range is not None else [None] * d
    edges, flat, nbins = [], None, []
    idt = _int_dtype()
    for i in builtins.range(d):
        col = util.convert_element_type(sample[:, i], dt)
        e = _bin_edges("histogramdd", col, bins_per[i], ranges[i], dt)
        ne = get_aval(e).shape[0]
        idx = searchsorted(e, col, side="right")
        idx = ufuncs.where(ufuncs.equal(col, e[-1]), np.array(ne - 1, idt), idx)
        flat = idx if flat is None else ufuncs.add(ufuncs.multiply(flat, np.array(ne + 1, idt)), idx)
        edges.append(e)
        nbins.append(ne + 1)
    total = int(np.prod(nbins))
    hist = creation.zeros((total,), get_aval(w).dtype).at[flat].add(w)
    hist = manipulation.reshape(hist, tuple(nbins))
    hist = hist[tuple(slice(1, -1) for _ in nbins)]
    if density:
        hist = ufuncs.divide(hist, reductions.sum(hist))
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = get_aval(e).shape[0] - 1
            hist = ufuncs.divide(hist, manipulation.reshape(ufuncs.subtract(e[1:], e[:-1]), tuple(shape)))
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    util.check_arraylike("histogram2d", x, y)
    x, y = util.promote_dtypes(x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = None
    if nb is not None and nb != 2:
        bins = [bins, bins]
    sample = manipulation.stack([manipulation.ravel(x), manipulation.ravel(y)], axis=1)
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``where(c, x, y)`` selects elementwise (ufuncs.where); ``where(c)`` is ``nonzero(c)``,
    which needs ``size=`` under jit."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given")
    return _where_jit(condition, x, y)


def _where(condition, x, y):
    """The three-argument ``where``: JAX's ``jnp.where`` calls a jit-decorated ``_where``, so it
    runs compiled when called eagerly and is a nested ``jit[name=_where]`` equation under a trace.
    morphax/numpy/__init__.py installs that jit of it as ``_where_jit`` (jit is a layer above)."""
    return ufuncs.where(condition, x, y)


_where_jit = _where
