"""Building arrays from pieces and editing them out of place: append, insert, delete, put,
place, compress, choose, resize, trim_zeros, block, rollaxis and unstack. pad lives in padding.py.

Shapes, positions and axes are static (read on the host); data flows through jnp/lax functions,
so everything here works under jit, grad and vmap.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    creation,
    indexing,
    manipulation,
    searching,
    ufuncs,
    util,
)

__all__ = [
    "append",
    "rollaxis",
    "unstack",
    "delete",
    "resize",
    "choose",
    "block",
    "trim_zeros",
    "compress",
    "put",
    "place",
    "insert",
]


def rollaxis(a, axis, start=0):
    """Roll `axis` backwards until it lies before position `start` (NumPy's semantics)."""
    a = util.checked_array("rollaxis", a)
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
    x = util.checked_array("unstack", x)
    if len(x.shape) == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    x = manipulation.moveaxis(x, util.canonicalize_axis(axis, len(x.shape), "unstack"), 0)
    return tuple(x[i] for i in range(x.shape[0]))


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """Copy of `arr` without the entries `obj` (static int, slice or index array) along `axis`."""
    arr = util.checked_array("delete", arr)
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
    a = util.checked_array("resize", a)
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
    a = util.checked_array("choose", a)
    if not _dtypes.issubdtype(a.dtype, np.integer):
        raise ValueError("`a` array must be integer typed")
    chs = [util.checked_array("choose", c) for c in choices]
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
            x = util.checked_array("block", x)
            while len(x.shape) < nd:
                x = x[None]
            return x
        parts = [rec(e, level + 1) for e in x]
        return manipulation.concatenate(parts, axis=-(depth - level))

    return rec(arrays, 0)


def trim_zeros(filt, trim="fb"):
    """1-D `filt` without its leading ('f') and/or trailing ('b') zeros (concrete input only)."""
    x = util.checked_array("trim_zeros", filt)
    if len(x.shape) != 1:
        raise ValueError(f"trim_zeros requires 1-D input, got shape {x.shape}")
    nz = np.flatnonzero(util.host_value(x, "trim_zeros", "filt"))
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
    a = util.checked_array("compress", a)
    condition = util.checked_array("compress", condition)
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
    cond = util.host_value(condition, "compress", "condition")
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
    a = util.checked_array("put", a)
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
    arr = util.checked_array("place", arr)
    m = util.host_value(util.checked_array("place", mask), "place", "mask")
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
    a = util.checked_array("insert", arr)
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


def append(arr, values, axis=None):
    """`values` appended to `arr` (both flattened when axis is None)."""
    arr = util.checked_array("append", arr)
    values = util.checked_array("append", values)
    if axis is None:
        return manipulation.concatenate([manipulation.ravel(arr), manipulation.ravel(values)], 0)
    return manipulation.concatenate([arr, values], axis=axis)
