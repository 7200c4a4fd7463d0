"""NumPy's index tricks: the s_ and index_exp index expressions, the mgrid/ogrid dense and open
grids, the r_/c_ axis concatenators, and the index grids and conversions meshgrid, indices, ix_,
unravel_index and ravel_multi_index."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    creation,
    manipulation,
    ufuncs,
    util,
)

__all__ = [
    "s_",
    "index_exp",
    "mgrid",
    "ogrid",
    "r_",
    "c_",
    "meshgrid",
    "indices",
    "ix_",
    "unravel_index",
    "ravel_multi_index",
]


def _int_dtype():
    return _dtypes.canonicalize_dtype(np.int64)


class _IndexExpression:
    def __init__(self, maketuple):
        self.maketuple = maketuple

    def __getitem__(self, item):
        if self.maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = _IndexExpression(False)
index_exp = _IndexExpression(True)


def _grid_axis(sl):
    if not isinstance(sl, slice):
        raise TypeError("mgrid/ogrid indices must be slices")
    start = 0 if sl.start is None else sl.start
    step = 1 if sl.step is None else sl.step
    stop = sl.stop
    if isinstance(step, complex):
        num = int(abs(step))
        return np.linspace(start, stop, num, dtype=float), True
    arr = np.arange(start, stop, step)
    return arr, arr.dtype.kind == "f"


class _Grid:
    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        single = isinstance(key, slice)
        keys = (key,) if single else tuple(key)
        axes = [_grid_axis(k) for k in keys]
        is_float = any(f for _, f in axes)
        dt = np.float32 if is_float else _int_dtype()
        vecs = [creation.asarray(v.astype(dt)) for v, _ in axes]
        if single:
            return vecs[0]
        if not vecs:
            return creation.zeros((0,), dt) if not self.sparse else []
        outs = meshgrid(*vecs, indexing="ij", sparse=self.sparse)
        return outs if self.sparse else manipulation.stack(outs, 0)


mgrid = _Grid(False)
ogrid = _Grid(True)


class _AxisConcatenator:
    """NumPy's r_/c_: concatenate slices, scalars and arrays along an axis (string directives
    'axis[,ndmin[,trans1d]]' supported; matrix directives 'r'/'c' are not)."""

    def __init__(self, axis, ndmin, trans1d):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                raise NotImplementedError("r_/c_ matrix directives ('r', 'c') are not supported")
            try:
                vec = [int(v) for v in directive.split(",")]
            except ValueError:
                raise ValueError(f"could not understand directive {directive!r}") from None
            axis = vec[0]
            if len(vec) > 1:
                ndmin = vec[1]
            if len(vec) > 2:
                trans1d = vec[2]
            if len(vec) > 3:
                raise ValueError("r_/c_ directives take at most three integers")
        outs = []
        for item in items:
            if isinstance(item, str):
                raise ValueError("string directives must be the first entry of r_/c_")
            x = _Grid(False)[item] if isinstance(item, slice) else creation.asarray(item)
            item_nd = len(x.shape)
            while len(x.shape) < ndmin:
                x = x[None]
            if trans1d != -1 and item_nd < ndmin:
                k2 = ndmin - item_nd
                k1 = trans1d if trans1d >= 0 else trans1d + k2 + 1
                d = list(range(ndmin))
                x = manipulation.transpose(x, d[:k1] + d[k2:] + d[k1:k2])
            outs.append(x)
        if not outs:
            return creation.zeros((0,), np.float32)
        return manipulation.concatenate(outs, axis=axis)


r_ = _AxisConcatenator(0, 1, -1)
c_ = _AxisConcatenator(-1, 2, 0)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    args = [util.checked_array("meshgrid", x) for x in xi]
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
        a = util.checked_array("ix_", a)
        if len(a.shape) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {a.shape}")
        if a.dtype == np.bool_:
            raise TypeError("Boolean arguments to jax.numpy.ix_ are not supported.")
        sh = [1] * n
        sh[i] = a.shape[0]
        out.append(manipulation.reshape(a, tuple(sh)))
    return tuple(out)


def unravel_index(indices, shape):
    """Tuple of coordinate arrays for flat `indices` into `shape` (out-of-range indices clip)."""
    idx = util.checked_array("unravel_index", indices)
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
    idx = [util.checked_array("ravel_multi_index", i) for i in multi_index]
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
