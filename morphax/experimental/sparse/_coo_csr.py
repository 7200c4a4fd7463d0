"""The legacy two-dimensional formats COO, CSR and CSC with their matrix-vector and
matrix-matrix products. Their primitives reuse the BCOO kernels on coordinates (a CSR's rows are
expanded from indptr), so their rules are those compositions' (util.py)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import morphax.numpy as jnp
from morphax._src.tree_util import register_pytree_node_class
from morphax.experimental.sparse import _bcoo_prims as P
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse.bcsr import coo_indices, indptr_of_rows
from morphax.experimental.sparse.util import (
    SparseInfo,
    aval,
    batch_by_vmap,
    jvp_by_composition,
    sparse_primitive,
    transpose_by_composition,
)


class COOInfo(NamedTuple):
    shape: tuple
    rows_sorted: bool = False
    cols_sorted: bool = False


def _rules(p, impl, linear=True):
    jvp_by_composition(p, impl)
    if linear:
        transpose_by_composition(p, impl)
    batch_by_vmap(p, impl)


def _matvec(data, idx, v, shape, transpose):
    """``A @ v`` (or ``A.T @ v``) for A given by coordinates `idx` (nse, 2); v of rank 1 or 2."""
    rows, cols = (idx[:, 1], idx[:, 0]) if transpose else (idx[:, 0], idx[:, 1])
    n_out = shape[1] if transpose else shape[0]
    dtype = jnp.result_type(data.dtype, v.dtype)
    vals = v.at[cols].get(mode="fill", fill_value=0)
    prod = data.astype(dtype).reshape((-1,) + (1,) * (v.ndim - 1)) * vals.astype(dtype)
    return jnp.zeros((n_out, *v.shape[1:]), dtype).at[rows].add(prod, mode="drop")


def _matvec_abstract(shape, transpose, data, v):
    n_out = shape[1] if transpose else shape[0]
    return aval((n_out, *v.shape[1:]), jnp.result_type(data.dtype, v.dtype))


# ----------------------------------------------------------------------------------------- COO


def _coo_idx(row, col, shape):
    idx = jnp.stack([row, col.astype(row.dtype)], axis=-1)
    return P.sentinel(idx, tuple(shape))


def _coo_todense_impl(data, row, col, *, spinfo):
    return P._todense_impl(data, _coo_idx(row, col, spinfo.shape), spinfo=SparseInfo(tuple(spinfo.shape)))


coo_todense_p = sparse_primitive(
    "coo_todense", _coo_todense_impl, lambda data, row, col, *, spinfo: aval(spinfo.shape, data.dtype)
)
_rules(coo_todense_p, _coo_todense_impl)


def _coo_fromdense_impl(mat, *, nse, index_dtype):
    data, idx = P._fromdense_impl(mat, nse=nse, n_batch=0, n_dense=0, index_dtype=index_dtype)
    return [data, idx[:, 0], idx[:, 1]]


coo_fromdense_p = sparse_primitive(
    "coo_fromdense",
    _coo_fromdense_impl,
    lambda mat, *, nse, index_dtype: [
        aval((nse,), mat.dtype),
        aval((nse,), index_dtype),
        aval((nse,), index_dtype),
    ],
    multiple_results=True,
)
_rules(coo_fromdense_p, _coo_fromdense_impl, linear=False)


def _coo_matvec_impl(data, row, col, v, *, spinfo, transpose):
    return _matvec(data, _coo_idx(row, col, spinfo.shape), v, spinfo.shape, transpose)


coo_matvec_p = sparse_primitive(
    "coo_matvec",
    _coo_matvec_impl,
    lambda data, row, col, v, *, spinfo, transpose: _matvec_abstract(spinfo.shape, transpose, data, v),
)
_rules(coo_matvec_p, _coo_matvec_impl)
coo_matmat_p = sparse_primitive(
    "coo_matmat",
    _coo_matvec_impl,
    lambda data, row, col, B, *, spinfo, transpose: _matvec_abstract(spinfo.shape, transpose, data, B),
)
_rules(coo_matmat_p, _coo_matvec_impl)


def coo_todense(mat):
    return coo_todense_p.bind(mat.data, mat.row, mat.col, spinfo=mat._info)


def coo_fromdense(mat, *, nse=None, index_dtype=jnp.int32):
    mat = jnp.asarray(mat)
    nse = int((np.asarray(mat) != 0).sum()) if nse is None else int(nse)
    data, row, col = coo_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
    return COO((data, row, col), shape=mat.shape, rows_sorted=True)


def coo_matvec(mat, v, transpose=False):
    return coo_matvec_p.bind(
        mat.data, mat.row, mat.col, jnp.asarray(v), spinfo=mat._info, transpose=bool(transpose)
    )


def coo_matmat(mat, B, *, transpose=False):
    return coo_matmat_p.bind(
        mat.data, mat.row, mat.col, jnp.asarray(B), spinfo=mat._info, transpose=bool(transpose)
    )


@register_pytree_node_class
class COO(JAXSparse):
    """A 2-D sparse matrix of (data, row, col) coordinates."""

    def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
        self.data, self.row, self.col = (jnp.asarray(a) for a in args)
        self.rows_sorted, self.cols_sorted = bool(rows_sorted), bool(cols_sorted)
        super().__init__(args, shape=shape)

    _info = property(lambda self: COOInfo(self.shape, self.rows_sorted, self.cols_sorted))

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        z = jnp.zeros(0, index_dtype)
        return cls((jnp.zeros(0, dtype), z, z), shape=shape, rows_sorted=True, cols_sorted=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        start_row, start_col = max(0, -k), max(0, k)
        n = max(0, min(N - start_row, M - start_col))
        d = jnp.arange(n, dtype=index_dtype)
        return cls(
            (jnp.ones(n, dtype), d + start_row, d + start_col),
            shape=(N, M),
            rows_sorted=True,
            cols_sorted=True,
        )

    def todense(self):
        return coo_todense(self)

    def transpose(self, axes=None):
        if axes is not None and tuple(axes) != (1, 0):
            raise NotImplementedError("COO.transpose: only the full transpose is supported")
        return COO(
            (self.data, self.col, self.row),
            shape=self.shape[::-1],
            rows_sorted=self.cols_sorted,
            cols_sorted=self.rows_sorted,
        )

    def tree_flatten(self):
        return (self.data, self.row, self.col), self._info._asdict()

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.row, obj.col = children
        obj.shape = tuple(aux["shape"])
        obj.rows_sorted, obj.cols_sorted = aux["rows_sorted"], aux["cols_sorted"]
        return obj

    def __neg__(self):
        return COO(
            (-self.data, self.row, self.col),
            shape=self.shape,
            rows_sorted=self.rows_sorted,
            cols_sorted=self.cols_sorted,
        )

    def __matmul__(self, other):
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        return coo_matvec(self, other) if other.ndim == 1 else coo_matmat(self, other)

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        # v @ A = (A.T @ v.T).T
        if other.ndim == 1:
            return coo_matvec(self, other, transpose=True)
        return coo_matmat(self, other.T, transpose=True).T


# ----------------------------------------------------------------------------------------- CSR


def _csr_idx(indices, indptr, shape):
    return coo_indices(indices, indptr, 0, tuple(shape))


def _csr_todense_impl(data, indices, indptr, *, shape):
    return P._todense_impl(data, _csr_idx(indices, indptr, shape), spinfo=SparseInfo(tuple(shape)))


csr_todense_p = sparse_primitive(
    "csr_todense", _csr_todense_impl, lambda data, indices, indptr, *, shape: aval(shape, data.dtype)
)
_rules(csr_todense_p, _csr_todense_impl)


def _csr_fromdense_impl(mat, *, nse, index_dtype):
    data, idx = P._fromdense_impl(mat, nse=nse, n_batch=0, n_dense=0, index_dtype=index_dtype)
    indptr = indptr_of_rows(idx[:, 0], mat.shape[0])
    return [data, idx[:, 1], indptr]


csr_fromdense_p = sparse_primitive(
    "csr_fromdense",
    _csr_fromdense_impl,
    lambda mat, *, nse, index_dtype: [
        aval((nse,), mat.dtype),
        aval((nse,), index_dtype),
        aval((mat.shape[0] + 1,), index_dtype),
    ],
    multiple_results=True,
)
_rules(csr_fromdense_p, _csr_fromdense_impl, linear=False)


def _csr_matvec_impl(data, indices, indptr, v, *, shape, transpose):
    return _matvec(data, _csr_idx(indices, indptr, shape), v, shape, transpose)


csr_matvec_p = sparse_primitive(
    "csr_matvec",
    _csr_matvec_impl,
    lambda data, indices, indptr, v, *, shape, transpose: _matvec_abstract(shape, transpose, data, v),
)
_rules(csr_matvec_p, _csr_matvec_impl)
csr_matmat_p = sparse_primitive(
    "csr_matmat",
    _csr_matvec_impl,
    lambda data, indices, indptr, B, *, shape, transpose: _matvec_abstract(shape, transpose, data, B),
)
_rules(csr_matmat_p, _csr_matvec_impl)


def csr_todense(mat):
    return csr_todense_p.bind(mat.data, mat.indices, mat.indptr, shape=tuple(mat.shape))


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32):
    mat = jnp.asarray(mat)
    nse = int((np.asarray(mat) != 0).sum()) if nse is None else int(nse)
    data, indices, indptr = csr_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
    return CSR((data, indices, indptr), shape=mat.shape)


def csr_matvec(mat, v, transpose=False):
    return csr_matvec_p.bind(
        mat.data, mat.indices, mat.indptr, jnp.asarray(v), shape=tuple(mat.shape), transpose=bool(transpose)
    )


def csr_matmat(mat, B, *, transpose=False):
    return csr_matmat_p.bind(
        mat.data, mat.indices, mat.indptr, jnp.asarray(B), shape=tuple(mat.shape), transpose=bool(transpose)
    )


class _Compressed(JAXSparse):
    def __init__(self, args, *, shape):
        self.data, self.indices, self.indptr = (jnp.asarray(a) for a in args)
        super().__init__(args, shape=shape)

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {"shape": self.shape}

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape = tuple(aux["shape"])
        return obj

    def __neg__(self):
        return type(self)((-self.data, self.indices, self.indptr), shape=self.shape)


@register_pytree_node_class
class CSR(_Compressed):
    """A 2-D sparse matrix in compressed-row format (data, indices, indptr)."""

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        return cls(
            (jnp.zeros(0, dtype), jnp.zeros(0, index_dtype), jnp.zeros(shape[0] + 1, index_dtype)),
            shape=shape,
        )

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        return csr_fromdense(
            jnp.eye(N, M, k, dtype=dtype),
            nse=max(0, min(N - max(0, -k), M - max(0, k))),
            index_dtype=index_dtype,
        )

    def todense(self):
        return csr_todense(self)

    def transpose(self, axes=None):
        return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def __matmul__(self, other):
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        return csr_matvec(self, other) if other.ndim == 1 else csr_matmat(self, other)

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        if other.ndim == 1:
            return csr_matvec(self, other, transpose=True)
        return csr_matmat(self, other.T, transpose=True).T


@register_pytree_node_class
class CSC(_Compressed):
    """A 2-D sparse matrix in compressed-column format: the CSR buffers of its transpose."""

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        t = csr_fromdense(jnp.asarray(mat).T, nse=nse, index_dtype=index_dtype)
        return cls((t.data, t.indices, t.indptr), shape=t.shape[::-1])

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        return cls(
            (jnp.zeros(0, dtype), jnp.zeros(0, index_dtype), jnp.zeros(shape[1] + 1, index_dtype)),
            shape=shape,
        )

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        t = CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype)
        return cls((t.data, t.indices, t.indptr), shape=(N, M))

    def _csr_of_transpose(self):
        return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def todense(self):
        return csr_todense(self._csr_of_transpose()).T

    def transpose(self, axes=None):
        return self._csr_of_transpose()

    def __matmul__(self, other):
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        t = self._csr_of_transpose()
        return (
            csr_matvec(t, other, transpose=True) if other.ndim == 1 else csr_matmat(t, other, transpose=True)
        )

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        t = self._csr_of_transpose()
        if other.ndim == 1:
            return csr_matvec(t, other)
        return csr_matmat(t, other.T).T
