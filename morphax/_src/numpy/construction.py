"""Diagonals, triangles, index grids and small array constructions (diag, tri, tril, meshgrid,
indices, ix_, append...). pad lives in padding.py, s_/mgrid/r_... in index_tricks.py.

Shapes, offsets and axes are static (read on the host); data flows through jnp/lax functions, so
everything here works under jit, grad and vmap.
"""

from __future__ import annotations

import importlib
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    creation,
    indexing,
    linalg_array_api,
    manipulation,
    products,
    reductions,
    searching,
    ufuncs,
    util,
)

__all__ = [
    "diag", "diagflat", "diagonal", "trace", "tri", "tril", "triu", "tril_indices", "triu_indices",
    "tril_indices_from", "triu_indices_from", "diag_indices", "diag_indices_from", "fill_diagonal",
    "meshgrid", "indices", "ix_", "append", "rollaxis", "unstack", "vander", "matvec", "vecmat",
    "unravel_index", "ravel_multi_index", "delete", "resize", "choose", "fromfunction",
    "apply_over_axes", "apply_along_axis", "block", "mask_indices", "trim_zeros", "compress", "put",
    "place", "insert",
]  # fmt: skip


def _arr(fun_name, x):
    util.check_arraylike(fun_name, x)
    return util.asarray_like(x)


def _int_dtype():
    return _dtypes.canonicalize_dtype(np.int64)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal `offset` of the plane (axis1, axis2), moved to the last axis."""
    a = _arr("diagonal", a)
    nd = len(a.shape)
    if nd < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    a1 = util.canonicalize_axis(axis1, nd, "diagonal", "axis1")
    a2 = util.canonicalize_axis(axis2, nd, "diagonal", "axis2")
    if a1 == a2:
        raise ValueError("axis1 and axis2 must not be equal")
    a = manipulation.moveaxis(a, (a1, a2), (-2, -1))
    return linalg_array_api.diagonal(a, offset=operator.index(offset))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along diagonal `offset` of the plane (axis1, axis2)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    d = diagonal(a, offset, axis1, axis2)
    return reductions.sum(d, axis=-1, dtype=dtype)


def diag(v, k=0):
    """Extract a diagonal (2-D input) or build a diagonal matrix (1-D input)."""
    v = _arr("diag", v)
    k = operator.index(k)
    if len(v.shape) == 2:
        return diagonal(v, offset=k)
    if len(v.shape) != 1:
        raise ValueError("diag input must be 1d or 2d")
    n = v.shape[0] + abs(k)
    ext = manipulation.concatenate([v, creation.zeros((abs(k),), v.dtype)]) if k else v
    mask = creation.asarray(np.eye(n, k=k, dtype=bool))
    vals = ext[:, None] if k >= 0 else ext[None, :]
    return ufuncs.where(mask, vals, creation.zeros((), v.dtype))


def diagflat(v, k=0):
    """A 2-D array with the flattened input on diagonal `k`."""
    v = _arr("diagflat", v)
    return diag(manipulation.ravel(v), k)


def tri(N, M=None, k=0, dtype=None):  # noqa: N803 - NumPy's names
    """Ones at and below diagonal `k`, zeros elsewhere."""
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    dt = np.dtype(np.float32) if dtype is None else dtype
    return creation.asarray(np.tri(n, m, operator.index(k), dtype=bool)).astype(dt)


def _tri_mask(fun_name, m, k, lower):
    m = _arr(fun_name, m)
    if len(m.shape) < 2:
        raise ValueError(f"Argument to jax.numpy.{fun_name} must be at least 2D")
    r, c = m.shape[-2:]
    k = operator.index(k)
    mask = np.tri(r, c, k, dtype=bool) if lower else ~np.tri(r, c, k - 1, dtype=bool)
    return ufuncs.where(creation.asarray(mask), m, creation.zeros((), m.dtype))


def tril(m, k=0):
    """Lower triangle of the last two axes."""
    return _tri_mask("tril", m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes."""
    return _tri_mask("triu", m, k, False)


def _idx_pair(rows, cols):
    dt = _int_dtype()
    return creation.asarray(rows.astype(dt)), creation.asarray(cols.astype(dt))


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an (n, m) array."""
    return _idx_pair(
        *np.tril_indices(operator.index(n), operator.index(k), None if m is None else operator.index(m))
    )


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle of an (n, m) array."""
    return _idx_pair(
        *np.triu_indices(operator.index(n), operator.index(k), None if m is None else operator.index(m))
    )


def _shape2d(fun_name, arr):
    s = np.shape(arr)
    if len(s) != 2:
        raise ValueError(f"jax.numpy.{fun_name}: input array must be 2-D; got shape {s}")
    return s


def tril_indices_from(arr, k=0):
    """tril_indices for the shape of 2-D `arr`."""
    n, m = _shape2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    """triu_indices for the shape of 2-D `arr`."""
    n, m = _shape2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an n x ... x n array."""
    n, ndim = operator.index(n), operator.index(ndim)
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    idx = creation.arange(n, dtype=_int_dtype())
    return (idx,) * ndim


def diag_indices_from(arr):
    """diag_indices for an array whose axes all have the same length."""
    s = np.shape(arr)
    if len(s) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(s[0], len(s))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """Copy of `a` with its main diagonal set to `val` (cycled); JAX requires inplace=False."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    a = _arr("fill_diagonal", a)
    s = a.shape
    if len(s) < 2:
        raise ValueError("array must be at least 2-d")
    if len(s) > 2 and len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(s)
    val = creation.asarray(val)
    if len(val.shape) == 0:
        vals = manipulation.broadcast_to(val, (n,))
    else:
        flat = manipulation.ravel(val)
        size = flat.shape[0]
        reps = -(-n // size) if size else 0
        vals = manipulation.tile(flat, reps)[:n]
    vals = vals.astype(a.dtype)
    idx = np.arange(n)
    return a.at[(idx,) * len(s)].set(vals)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    args = [_arr("meshgrid", x) for x in xi]
    for x in args:
        if len(x.shape) != 1:
            raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shape {x.shape}")
    nd = len(args)
    shapes = [1] * nd
    outs = []
    for i, x in enumerate(args):
        sh = list(shapes)
        sh[i] = x.shape[0]
        outs.append(manipulation.reshape(x, tuple(sh)))
    if indexing == "xy" and nd >= 2:
        outs = [manipulation.swapaxes(o, 0, 1) for o in outs]
    if not sparse:
        outs = manipulation.broadcast_arrays(*outs)
    return list(outs)


def indices(dimensions, dtype=None, sparse=False):
    """An array (or sparse tuple) of grid indices for `dimensions`."""
    dims = tuple(operator.index(d) for d in dimensions)
    dt = _int_dtype() if dtype is None else dtype
    out = []
    for i, d in enumerate(dims):
        sh = [1] * len(dims)
        sh[i] = d
        r = manipulation.reshape(creation.arange(d, dtype=dt), tuple(sh))
        out.append(r if sparse else manipulation.broadcast_to(r, dims))
    if sparse:
        return tuple(out)
    if not out:
        return creation.zeros((0,), dt)
    return manipulation.stack(out, 0)


def ix_(*args):
    """Open mesh from 1-D sequences, for cross-product indexing."""
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = _arr("ix_", a)
        if len(a.shape) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {a.shape}")
        if a.dtype == np.bool_:
            raise TypeError("Boolean arguments to jax.numpy.ix_ are not supported.")
        sh = [1] * n
        sh[i] = a.shape[0]
        out.append(manipulation.reshape(a, tuple(sh)))
    return tuple(out)


def append(arr, values, axis=None):
    """`values` appended to `arr` (both flattened when axis is None)."""
    arr = _arr("append", arr)
    values = _arr("append", values)
    if axis is None:
        return manipulation.concatenate([manipulation.ravel(arr), manipulation.ravel(values)], 0)
    return manipulation.concatenate([arr, values], axis=axis)


def rollaxis(a, axis, start=0):
    """Roll `axis` backwards until it lies before position `start` (NumPy's semantics)."""
    a = _arr("rollaxis", a)
    nd = len(a.shape)
    axis = util.canonicalize_axis(axis, nd, "rollaxis")
    start = operator.index(start)
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise ValueError(f"start={start} must satisfy -{nd} <= start <= {nd}")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    return manipulation.moveaxis(a, axis, start)


def unstack(x, /, *, axis=0):
    """Tuple of the slices of `x` along `axis`."""
    x = _arr("unstack", x)
    if len(x.shape) == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    x = manipulation.moveaxis(x, util.canonicalize_axis(axis, len(x.shape), "unstack"), 0)
    return tuple(x[i] for i in range(x.shape[0]))


def vander(x, N=None, increasing=False):  # noqa: N803 - NumPy's name
    """Vandermonde matrix of 1-D `x` with `N` columns."""
    x = _arr("vander", x)
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


def matvec(x1, x2, /):
    """Batched matrix-vector product over the last axes."""
    x1, x2 = _arr("matvec", x1), _arr("matvec", x2)
    return products.matmul(x1, x2[..., None])[..., 0]


def vecmat(x1, x2, /):
    """Batched (conjugated) vector-matrix product over the last axes."""
    x1, x2 = _arr("vecmat", x1), _arr("vecmat", x2)
    return products.matmul(ufuncs.conjugate(x1)[..., None, :], x2)[..., 0, :]


def unravel_index(indices, shape):
    """Tuple of coordinate arrays for flat `indices` into `shape` (out-of-range indices clip)."""
    idx = _arr("unravel_index", indices)
    if not _dtypes.issubdtype(idx.dtype, np.integer):
        raise TypeError("Only integer indices are allowed for unravel_index")
    dims = tuple(operator.index(d) for d in np.atleast_1d(shape))
    total = int(np.prod(dims))
    if total == 0:
        raise ValueError("cannot unravel index into an array of size zero")
    idx = ufuncs.clip(idx, -total, total - 1)
    idx = ufuncs.where(ufuncs.less(idx, 0), idx + total, idx)
    out = []
    for d in reversed(dims):
        out.append(ufuncs.remainder(idx, d))
        idx = ufuncs.floor_divide(idx, d)
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices of the coordinate arrays `multi_index` into `dims`."""
    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    idx = [_arr("ravel_multi_index", i) for i in multi_index]
    for i in idx:
        if not _dtypes.issubdtype(i.dtype, np.integer):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        if any(isinstance(i, Tracer) for i in idx):
            raise ValueError(
                "The error occurred because ravel_multi_index was jit-compiled with mode='raise'. "
                "Use mode='wrap' or mode='clip' instead."
            )
        for i, d in zip(idx, dims):
            if np.any((np.asarray(i) < 0) | (np.asarray(i) >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [ufuncs.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [ufuncs.remainder(i, d) for i, d in zip(idx, dims)]
    else:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    order_dims = list(range(len(dims)))
    if order == "F":
        order_dims = order_dims[::-1]
    result = creation.zeros((), _int_dtype())
    stride = 1
    for ax in reversed(order_dims):
        result = result + idx[ax].astype(_int_dtype()) * stride
        stride *= dims[ax]
    return result


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """Copy of `arr` without the entries `obj` (static int, slice or index array) along `axis`."""
    arr = _arr("delete", arr)
    if axis is None:
        arr = manipulation.ravel(arr)
        axis = 0
    axis = util.canonicalize_axis(axis, len(arr.shape), "delete")
    if isinstance(obj, Tracer):
        raise ValueError("jnp.delete(arr, obj): obj must be static (concrete) under jit")
    if not isinstance(obj, slice):
        obj = np.asarray(obj)
        if obj.dtype == np.bool_:
            if obj.shape != (arr.shape[axis],):
                raise ValueError(
                    "boolean array argument obj to delete must be one dimensional and match the axis length"
                )
            obj = np.flatnonzero(obj)
    keep = np.delete(np.arange(arr.shape[axis]), obj)
    return indexing.take(arr, creation.asarray(keep.astype(np.int32)), axis=axis)


def resize(a, new_shape):
    """`a` flattened, repeated cyclically and reshaped to `new_shape`."""
    a = _arr("resize", a)
    shape = (
        (operator.index(new_shape),)
        if np.ndim(new_shape) == 0
        else tuple(operator.index(d) for d in new_shape)
    )
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = manipulation.ravel(a)
    n = int(np.prod(shape))
    size = flat.shape[0]
    if n == 0 or size == 0:
        return creation.zeros(shape, a.dtype)
    reps = -(-n // size)
    return manipulation.reshape(manipulation.tile(flat, reps)[:n], shape)


def choose(a, choices, out=None, mode="raise"):
    """Elements picked from `choices` by the integer index array `a`."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = _arr("choose", a)
    if not _dtypes.issubdtype(a.dtype, np.integer):
        raise ValueError("`a` array must be integer typed")
    chs = [_arr("choose", c) for c in choices]
    n = len(chs)
    if mode == "raise":
        if isinstance(a, Tracer):
            raise ValueError(
                "The error occurred because jnp.choose was jit-compiled with mode='raise'. Use mode='wrap' or mode='clip' instead."
            )
        if np.any((np.asarray(a) < 0) | (np.asarray(a) >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = ufuncs.remainder(a, n)
    elif mode == "clip":
        a = ufuncs.clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    chs = util.promote_dtypes(*chs)
    a, *chs = manipulation.broadcast_arrays(a, *chs)
    stacked = manipulation.stack(chs, 0)
    return indexing.take_along_axis(stacked, a[None], axis=0)[0]


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function` called on the grid of indices of `shape` (cast to `dtype`)."""
    shape = tuple(operator.index(d) for d in shape)
    grids = indices(shape, dtype=dtype, sparse=False)
    return function(*(grids[i] for i in range(len(shape))), **kwargs)


def apply_over_axes(func, a, axes):
    """Apply `func(a, axis)` repeatedly over `axes`, keeping the number of dimensions."""
    a = _arr("apply_over_axes", a)
    for axis in np.atleast_1d(axes):
        axis = int(axis)
        b = func(a, axis)
        if b.ndim == a.ndim:
            a = b
        elif b.ndim == a.ndim - 1:
            a = manipulation.expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`func1d` applied to the 1-D slices of `arr` along `axis` (via vmap)."""
    # vmap sits above the numpy layer: look it up at call time instead of importing it.
    vmap = importlib.import_module("morphax._src.vmap_api").vmap

    arr = _arr("apply_along_axis", arr)
    nd = len(arr.shape)
    axis = util.canonicalize_axis(axis, nd, "apply_along_axis")

    def fn(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, nd - axis):
        fn = vmap(fn, in_axes=i, out_axes=-1)
    for _ in range(axis):
        fn = vmap(fn, in_axes=0, out_axes=0)
    return fn(arr)


def _block_depth(x, fun_name="block"):
    if isinstance(x, list):
        if not x:
            raise ValueError("Lists cannot be empty")
        depths = {_block_depth(e) for e in x}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched")
        return 1 + depths.pop()
    if isinstance(x, tuple):
        raise TypeError("jnp.block does not allow tuples; use lists.")
    return 0


def _block_ndim(x):
    if isinstance(x, list):
        return max(_block_ndim(e) for e in x)
    return np.ndim(x)


def block(arrays):
    """Assemble an array from nested lists of blocks."""
    depth = _block_depth(arrays)
    nd = max(depth, _block_ndim(arrays))

    def rec(x, level):
        if not isinstance(x, list):
            x = _arr("block", x)
            while len(x.shape) < nd:
                x = x[None]
            return x
        parts = [rec(e, level + 1) for e in x]
        return manipulation.concatenate(parts, axis=-(depth - level))

    return rec(arrays, 0)


def _concrete(x, fun_name, what):
    if isinstance(x, Tracer):
        raise ValueError(
            f"jnp.{fun_name}: {what} must be concrete (its value decides the output shape); "
            "pass size= where supported, or call it outside jit."
        )
    return np.asarray(x)


def mask_indices(n, mask_func, k=0, *, size=None):
    """Row/column indices where `mask_func(ones((n, n)), k)` is nonzero."""
    m = mask_func(creation.ones((operator.index(n), operator.index(n)), _int_dtype()), k)
    mv = _concrete(m, "mask_indices", "the mask")
    r, c = np.nonzero(mv)
    if size is not None:
        size = operator.index(size)
        r = np.concatenate([r[:size], np.zeros(max(0, size - len(r)), r.dtype)])
        c = np.concatenate([c[:size], np.zeros(max(0, size - len(c)), c.dtype)])
    return _idx_pair(r, c)


def trim_zeros(filt, trim="fb"):
    """1-D `filt` without its leading ('f') and/or trailing ('b') zeros (concrete input only)."""
    x = _arr("trim_zeros", filt)
    if len(x.shape) != 1:
        raise ValueError(f"trim_zeros requires 1-D input, got shape {x.shape}")
    nz = np.flatnonzero(_concrete(x, "trim_zeros", "filt"))
    if nz.size == 0:
        return x[:0]
    trim = trim.lower()
    start = int(nz[0]) if "f" in trim else 0
    stop = int(nz[-1]) + 1 if "b" in trim else x.shape[0]
    return x[start:stop]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """Slices of `a` along `axis` where 1-D `condition` is true (concrete condition, or any with size=)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    a = _arr("compress", a)
    condition = _arr("compress", condition)
    if len(condition.shape) != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        a = manipulation.ravel(a)
        axis = 0
    axis = util.canonicalize_axis(axis, len(a.shape), "compress")
    if size is not None:
        # JAX's traceable form: the selected slices first (stable), the rest replaced by fill_value.
        size = operator.index(size)
        cond = ufuncs.not_equal(condition, False)[: a.shape[axis]]
        m = cond.shape[0]
        if not 0 <= size <= m:
            raise ValueError(
                "size must be positive and not greater than the size of the array axis;"
                f" got {size=} for a.shape[axis]={m}"
            )
        x = manipulation.moveaxis(a, axis, 0)[:m]
        mask = manipulation.reshape(cond, (m,) + (1,) * (len(x.shape) - 1))
        x = ufuncs.where(mask, x, creation.asarray(fill_value).astype(x.dtype))
        order = searching.argsort(cond, stable=True, descending=True)[:size]
        return manipulation.moveaxis(indexing.take(x, order, axis=0), 0, axis)
    cond = _concrete(condition, "compress", "condition")
    n = a.shape[axis]
    if np.count_nonzero(cond[n:]):
        raise ValueError("condition contains entries that are out of bounds")
    idx = np.flatnonzero(cond[:n])
    return indexing.take(a, creation.asarray(idx.astype(np.int32)), axis=axis)


def put(a, ind, v, mode=None, *, inplace=True):
    """Copy of `a` with flat positions `ind` set to `v` (cycled); JAX requires inplace=False."""
    if inplace:
        raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are immutable. "
                         "Pass inplace=False to instead return an updated array.")  # fmt: skip
    a = _arr("put", a)
    ind = manipulation.ravel(creation.asarray(ind))
    v = manipulation.ravel(creation.asarray(v)).astype(a.dtype)
    k = ind.shape[0]
    if k == 0 or v.shape[0] == 0:
        return a
    vals = manipulation.tile(v, -(-k // v.shape[0]))[:k]
    flat = manipulation.ravel(a)
    size = flat.shape[0]
    if mode == "wrap":
        ind = ufuncs.remainder(ind, size)
    elif mode == "clip":
        ind = ufuncs.clip(ind, 0, size - 1)
    elif mode is None or mode == "fill":
        pass
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return manipulation.reshape(flat.at[ind].set(vals), a.shape)


def place(arr, mask, vals, *, inplace=True):
    """Copy of `arr` with positions where `mask` is true set to `vals` (cycled); inplace=False only."""
    if inplace:
        raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are immutable. "
                         "Pass inplace=False to instead return an updated array.")  # fmt: skip
    arr = _arr("place", arr)
    m = _concrete(_arr("place", mask), "place", "mask")
    if m.shape != arr.shape:
        raise ValueError("place: arr and mask must have the same shape")
    idx = np.flatnonzero(m)
    if idx.size == 0:
        return arr
    v = manipulation.ravel(creation.asarray(vals)).astype(arr.dtype)
    if v.shape[0] == 0:
        raise ValueError("Cannot place values from an empty array")
    vv = manipulation.tile(v, -(-idx.size // v.shape[0]))[: idx.size]
    flat = manipulation.ravel(arr).at[creation.asarray(idx.astype(np.int32))].set(vv)
    return manipulation.reshape(flat, arr.shape)


def _slice_axis(x, axis, idx):
    return indexing.take(x, creation.asarray(np.asarray(idx, np.int32)), axis=axis)


def insert(arr, obj, values, axis=None):
    """Copy of `arr` with `values` inserted before the static indices `obj` along `axis`."""
    a = _arr("insert", arr)
    if isinstance(obj, Tracer):
        raise ValueError("jnp.insert(arr, obj, values): obj must be static (concrete) under jit")
    if axis is None:
        a = manipulation.ravel(a)
        axis = 0
    nd = len(a.shape)
    axis = util.canonicalize_axis(axis, nd, "insert")
    n = a.shape[axis]
    vals = creation.asarray(values).astype(a.dtype)
    if isinstance(obj, slice):
        idx = np.arange(n)[obj]
    else:
        idx = np.asarray(obj)
        if idx.dtype.kind == "b":
            raise ValueError("jnp.insert(): boolean indices are not supported")
        if idx.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
        if idx.size and idx.dtype.kind not in "iu":
            raise IndexError("index arrays for insert must be integers")
        idx = idx.astype(np.int64)
    if np.any((idx < -n) | (idx > n)):
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    while len(vals.shape) < nd:
        vals = vals[None]
    if idx.ndim == 0:
        vals = manipulation.moveaxis(vals, 0, axis)
    if idx.size == 1:
        pos = int(idx.reshape(()))
        shape = list(a.shape)
        shape[axis] = vals.shape[axis]
        vals = manipulation.broadcast_to(vals, tuple(shape))
        parts = [_slice_axis(a, axis, np.arange(pos)), vals, _slice_axis(a, axis, np.arange(pos, n))]
        return manipulation.concatenate(parts, axis=axis)
    k = idx.size
    shape = list(a.shape)
    shape[axis] = k
    vals = manipulation.broadcast_to(vals, tuple(shape))
    order = np.argsort(idx, kind="stable")
    newpos = idx[order] + np.arange(k)
    src = np.empty(n + k, np.int64)
    is_new = np.zeros(n + k, bool)
    is_new[newpos] = True
    src[newpos] = n + order
    src[~is_new] = np.arange(n)
    both = manipulation.concatenate([a, vals], axis=axis)
    return _slice_axis(both, axis, src)
