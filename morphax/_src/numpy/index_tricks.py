"""NumPy's index tricks: the s_ and index_exp index expressions, the mgrid/ogrid dense and open
grids, and the r_/c_ axis concatenators."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, manipulation
from morphax._src.numpy.construction import meshgrid

__all__ = ["s_", "index_exp", "mgrid", "ogrid", "r_", "c_"]


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
