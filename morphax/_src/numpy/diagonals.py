"""Diagonals and triangles: diagonal, trace, diag, diagflat, fill_diagonal, tri, tril, triu, the
triangle and diagonal index functions (tril_indices, triu_indices_from, diag_indices, ...)
and mask_indices.

Shapes and offsets are static (read on the host); data flows through jnp/lax functions, so
everything here works under jit, grad and vmap.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import (
    creation,
    linalg_array_api,
    manipulation,
    reductions,
    ufuncs,
    util,
)
from morphax._src.prims import lax_api as L

__all__ = [
    "diagonal",
    "trace",
    "diag",
    "diagflat",
    "tri",
    "tril",
    "triu",
    "tril_indices",
    "triu_indices",
    "tril_indices_from",
    "triu_indices_from",
    "diag_indices",
    "diag_indices_from",
    "fill_diagonal",
    "mask_indices",
]


def _int_dtype():
    return _dtypes.canonicalize_dtype(np.int64)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal `offset` of the plane (axis1, axis2), moved to the last axis."""
    a = util.checked_array("diagonal", a)
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
    v = util.checked_array("diag", v)
    k = operator.index(k)
    if len(v.shape) == 2:
        return diagonal(v, offset=k)
    if len(v.shape) != 1:
        raise ValueError("diag input must be 1d or 2d")
    n = v.shape[0] + abs(k)
    ext = manipulation.concatenate([v, creation.zeros((abs(k),), v.dtype)]) if k else v
    # Built from iotas, as JAX builds it: a traced diag then carries no constant (equinox's
    # closure-converted operators must have the same constants in both branches of a cond).
    mask = creation.eye(n, k=k, dtype=bool)
    vals = ext[:, None] if k >= 0 else ext[None, :]
    return ufuncs.where(mask, vals, creation.zeros((), v.dtype))


def diagflat(v, k=0):
    """A 2-D array with the flattened input on diagonal `k`."""
    v = util.checked_array("diagflat", v)
    return diag(manipulation.ravel(v), k)


def tri(N, M=None, k=0, dtype=None):  # noqa: N803 - NumPy's names
    """Ones at and below diagonal `k`, zeros elsewhere."""
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    dt = np.dtype(np.float32) if dtype is None else dtype
    return _triangle(n, m, operator.index(k), True).astype(dt)


def _triangle(rows: int, cols: int, k: int, lower: bool):
    """The (rows, cols) boolean mask at and below (`lower`) or at and above diagonal `k`, built
    from iotas as JAX builds it: traced code then carries no constant (equinox closure-converts
    functions and compares their constants between the branches of a cond)."""
    i = L.broadcasted_iota(_dtypes.int32, (rows, cols), 0)
    j = L.broadcasted_iota(_dtypes.int32, (rows, cols), 1)
    shifted = ufuncs.add(i, k)
    return ufuncs.less_equal(j, shifted) if lower else ufuncs.greater_equal(j, shifted)


def _tri_mask(fun_name, m, k, lower):
    m = util.checked_array(fun_name, m)
    if len(m.shape) < 2:
        raise ValueError(f"Argument to jax.numpy.{fun_name} must be at least 2D")
    r, c = m.shape[-2:]
    mask = _triangle(r, c, operator.index(k), lower)
    return ufuncs.where(mask, m, creation.zeros((), m.dtype))


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
    a = util.checked_array("fill_diagonal", a)
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


def mask_indices(n, mask_func, k=0, *, size=None):
    """Row/column indices where `mask_func(ones((n, n)), k)` is nonzero."""
    m = mask_func(creation.ones((operator.index(n), operator.index(n)), _int_dtype()), k)
    mv = util.host_value(m, "mask_indices", "the mask")
    r, c = np.nonzero(mv)
    if size is not None:
        size = operator.index(size)
        r = np.concatenate([r[:size], np.zeros(max(0, size - len(r)), r.dtype)])
        c = np.concatenate([c[:size], np.zeros(max(0, size - len(c)), c.dtype)])
    return _idx_pair(r, c)
