"""`BCSR`, the batched compressed-row format (two sparse dimensions), and its primitives.

Layout (JAX's): data (*batch, nse, *dense), indices (*batch, nse) column numbers, indptr
(*batch, n_rows + 1) with row r's entries at positions indptr[r]:indptr[r+1]; positions at or
past indptr[-1] are padding. Each primitive's implementation expands the rows to coordinates and
reuses the BCOO kernels, so the rules are those compositions' (util.py).
"""

from __future__ import annotations

import numpy as np

import morphax.numpy as jnp
from morphax._src.api.vmap import register_vmappable
from morphax._src.tree_util import register_pytree_node_class
from morphax.experimental.sparse import _bcoo_prims as P
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse.bcoo import BCOO, bcoo_fromdense, bcoo_sort_indices, bcoo_sum_duplicates
from morphax.experimental.sparse.util import (
    SparseInfo,
    aval,
    batch_by_vmap,
    broadcast_batch,
    jvp_by_composition,
    nfold_vmap,
    sparse_primitive,
    transpose_by_composition,
)


def csr_rows(indptr, nse):
    """The row of each of `nse` positions (unbatched); padding positions get row n_rows."""
    # The row of position e counts the row ends at or before e: a histogram of indptr[1:] over
    # the positions, accumulated (O(nse + n_rows), where a search would compare every pair).
    ends = jnp.zeros(nse, indptr.dtype).at[indptr[1:]].add(1, mode="drop")
    return jnp.cumsum(ends).astype(indptr.dtype)


def coo_indices(indices, indptr, n_batch, shape):
    """BCOO indices (*batch, nse, 2) of a BCSR's buffers, padding marked out of bounds."""
    nse = indices.shape[-1]
    n_rows, n_cols = shape[n_batch], shape[n_batch + 1]

    def one(ind, ptr):
        rows = csr_rows(ptr, nse)
        pad = jnp.arange(nse) >= ptr[-1]
        rows = jnp.where(pad, n_rows, rows)
        cols = jnp.where(pad, n_cols, ind)
        return jnp.stack([rows, cols.astype(rows.dtype)], axis=-1)

    batch = tuple(shape[:n_batch])
    indices = jnp.broadcast_to(indices, batch + indices.shape[n_batch:])
    indptr = jnp.broadcast_to(indptr, batch + indptr.shape[n_batch:])
    return nfold_vmap(one, n_batch)(indices, indptr)


def _indptr_of(rows, n_rows, n_batch):
    """indptr of sorted row numbers (padding rows, = n_rows, last)."""
    return nfold_vmap(lambda r: indptr_of_rows(r, n_rows), n_batch)(rows)


def indptr_of_rows(rows, n_rows):
    """indptr of the sorted row numbers `rows` (unbatched): the running count of entries per row
    (rows out of bounds, the padding, are not counted)."""
    counts = jnp.zeros(n_rows, rows.dtype).at[rows].add(1, mode="drop")
    return jnp.concatenate([jnp.zeros(1, rows.dtype), jnp.cumsum(counts).astype(rows.dtype)])


# ---------------------------------------------------------------------------------- primitives


def _todense_impl(data, indices, indptr, *, spinfo):
    n_batch = indices.ndim - 1
    idx = coo_indices(indices, indptr, n_batch, spinfo.shape)
    return P._todense_impl(data, idx, spinfo=SparseInfo(tuple(spinfo.shape)))


bcsr_todense_p = sparse_primitive(
    "bcsr_todense", _todense_impl, lambda data, indices, indptr, *, spinfo: aval(spinfo.shape, data.dtype)
)
jvp_by_composition(bcsr_todense_p, _todense_impl)
transpose_by_composition(bcsr_todense_p, _todense_impl)
batch_by_vmap(bcsr_todense_p, _todense_impl)


def _fromdense_impl(mat, *, nse, n_batch, n_dense, index_dtype):
    data, idx = P._fromdense_impl(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    indptr = _indptr_of(idx[..., 0], mat.shape[n_batch], n_batch)
    return [data, idx[..., 1], indptr]


def _fromdense_abstract(mat, *, nse, n_batch, n_dense, index_dtype):
    batch, dense = mat.shape[:n_batch], mat.shape[mat.ndim - n_dense :]
    return [
        aval((*batch, nse, *dense), mat.dtype),
        aval((*batch, nse), index_dtype),
        aval((*batch, mat.shape[n_batch] + 1), index_dtype),
    ]


bcsr_fromdense_p = sparse_primitive(
    "bcsr_fromdense", _fromdense_impl, _fromdense_abstract, multiple_results=True
)
jvp_by_composition(bcsr_fromdense_p, _fromdense_impl)
batch_by_vmap(bcsr_fromdense_p, _fromdense_impl)


def _extract_impl(indices, indptr, mat):
    n_batch = indices.ndim - 1
    idx = coo_indices(indices, indptr, n_batch, mat.shape)
    return P._extract_impl(idx, mat)


def _extract_abstract(indices, indptr, mat):
    n_batch = indices.ndim - 1
    return aval((*mat.shape[:n_batch], indices.shape[-1], *mat.shape[n_batch + 2 :]), mat.dtype)


bcsr_extract_p = sparse_primitive("bcsr_extract", _extract_impl, _extract_abstract)
jvp_by_composition(bcsr_extract_p, _extract_impl)
transpose_by_composition(bcsr_extract_p, _extract_impl)
batch_by_vmap(bcsr_extract_p, _extract_impl)


def _dot_impl(
    lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers, lhs_spinfo, preferred_element_type=None
):
    n_batch = lhs_indices.ndim - 1
    idx = coo_indices(lhs_indices, lhs_indptr, n_batch, lhs_spinfo.shape)
    return P._dot_impl(
        lhs_data,
        idx,
        rhs,
        dimension_numbers=dimension_numbers,
        lhs_spinfo=SparseInfo(tuple(lhs_spinfo.shape)),
        preferred_element_type=preferred_element_type,
    )


def _dot_abstract(
    lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers, lhs_spinfo, preferred_element_type=None
):
    n_batch = lhs_indices.ndim - 1
    idx = aval((*lhs_indices.shape, 2), lhs_indices.dtype)
    del n_batch
    return P._dot_abstract(
        lhs_data,
        idx,
        rhs,
        dimension_numbers=dimension_numbers,
        lhs_spinfo=lhs_spinfo,
        preferred_element_type=preferred_element_type,
    )


bcsr_dot_general_p = sparse_primitive("bcsr_dot_general", _dot_impl, _dot_abstract)
jvp_by_composition(bcsr_dot_general_p, _dot_impl)
transpose_by_composition(bcsr_dot_general_p, _dot_impl)
batch_by_vmap(bcsr_dot_general_p, _dot_impl)


# ---------------------------------------------------------------------------------- the class


@register_pytree_node_class
class BCSR(JAXSparse):
    """A sparse array in batched compressed-row format: ``BCSR((data, indices, indptr),
    shape=shape)``."""

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices, indptr = args
        self.data, self.indices, self.indptr = (jnp.asarray(a) for a in (data, indices, indptr))
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        super().__init__(args, shape=shape)
        if len(self.shape) < self.n_batch + 2:
            raise ValueError(f"BCSR: shape {self.shape} has fewer than 2 sparse dimensions")

    n_batch = property(lambda self: self.indices.ndim - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
    _info = property(lambda self: SparseInfo(self.shape, self.indices_sorted, self.unique_indices))

    def _nse_axis(self):
        return self.n_batch

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), self._info._asdict()

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape = tuple(aux["shape"])
        obj.indices_sorted = aux["indices_sorted"]
        obj.unique_indices = aux["unique_indices"]
        return obj

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_bcoo(cls, arr):
        return bcoo_to_bcsr(arr)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        if n_dense or n_batch:
            raise NotImplementedError("BCSR.from_scipy_sparse: n_dense and n_batch must be 0")
        mat = mat.tocsr()
        index_dtype = index_dtype or np.int32
        return cls(
            (
                jnp.asarray(mat.data),
                jnp.asarray(mat.indices.astype(index_dtype)),
                jnp.asarray(mat.indptr.astype(index_dtype)),
            ),
            shape=mat.shape,
        )

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(shape)
        batch, dense = shape[:n_batch], shape[n_batch + 2 :]
        return cls(
            (
                jnp.zeros((*batch, nse, *dense), dtype),
                jnp.zeros((*batch, nse), index_dtype),
                jnp.zeros((*batch, shape[n_batch] + 1), index_dtype),
            ),
            shape=shape,
        )

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        return bcoo_to_bcsr(
            BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)
        )

    def todense(self):
        return bcsr_todense(self)

    def to_bcoo(self):
        idx = coo_indices(self.indices, self.indptr, self.n_batch, self.shape)
        data, idx = broadcast_batch(self.data, idx, self.shape[: self.n_batch])
        return BCOO(
            (data, idx),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    def sum_duplicates(self, nse=None, remove_zeros=True):
        return bcsr_sum_duplicates(self, nse=nse)

    def transpose(self, *args, **kwargs):
        raise NotImplementedError("BCSR transpose is not supported: convert with to_bcoo() first")

    def __neg__(self):
        return BCSR((-self.data, self.indices, self.indptr), shape=self.shape)

    def __mul__(self, other):
        other = jnp.asarray(other)
        if other.ndim:
            return NotImplemented
        return BCSR((self.data * other, self.indices, self.indptr), shape=self.shape)

    def __matmul__(self, other):
        from morphax.experimental.sparse.bcoo import _matmul_dims

        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        return bcsr_dot_general(self, other, dimension_numbers=_matmul_dims(self.ndim, other.ndim))

    def __rmatmul__(self, other):
        from morphax.experimental.sparse.bcoo import _matmul_dims

        other = jnp.asarray(other)
        return bcsr_dot_general(other, self, dimension_numbers=_matmul_dims(other.ndim, self.ndim))


def bcsr_todense(mat):
    return bcsr_todense_p.bind(mat.data, mat.indices, mat.indptr, spinfo=mat._info)


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=jnp.int32):
    mat = jnp.asarray(mat)
    if nse is None:
        nse = bcoo_fromdense(mat, n_batch=n_batch, n_dense=n_dense).nse
    if mat.ndim - n_batch - n_dense != 2:
        raise ValueError("bcsr_fromdense: BCSR has exactly two sparse dimensions")
    data, indices, indptr = bcsr_fromdense_p.bind(
        mat, nse=int(nse), n_batch=n_batch, n_dense=n_dense, index_dtype=np.dtype(index_dtype)
    )
    return BCSR((data, indices, indptr), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcsr_extract(indices, indptr, mat):
    return bcsr_extract_p.bind(jnp.asarray(indices), jnp.asarray(indptr), jnp.asarray(mat))


def bcsr_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    if isinstance(lhs, BCSR) and not isinstance(rhs, JAXSparse):
        return bcsr_dot_general_p.bind(
            lhs.data,
            lhs.indices,
            lhs.indptr,
            jnp.asarray(rhs),
            dimension_numbers=dn,
            lhs_spinfo=lhs._info,
            preferred_element_type=pet,
        )
    from morphax.experimental.sparse.bcoo import bcoo_dot_general

    lhs = lhs.to_bcoo() if isinstance(lhs, BCSR) else lhs
    rhs = rhs.to_bcoo() if isinstance(rhs, BCSR) else rhs
    return bcoo_dot_general(lhs, rhs, dimension_numbers=dn, preferred_element_type=pet)


def bcoo_to_bcsr(arr):
    """A BCSR of a BCOO with two sparse dimensions (its entries sorted row-major)."""
    if arr.n_sparse != 2:
        raise ValueError(f"BCSR.from_bcoo: the BCOO must have 2 sparse dimensions, has {arr.n_sparse}")
    if not arr.indices_sorted:
        arr = bcoo_sort_indices(arr)
    data, idx = broadcast_batch(arr.data, arr.indices, arr.shape[: arr.n_batch])
    indptr = _indptr_of(idx[..., 0], arr.shape[arr.n_batch], arr.n_batch)
    return BCSR(
        (data, idx[..., 1], indptr), shape=arr.shape, indices_sorted=True, unique_indices=arr.unique_indices
    )


def bcsr_sum_duplicates(mat, *, nse=None):
    return bcoo_to_bcsr(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    from morphax.experimental.sparse.bcoo import bcoo_broadcast_in_dim

    return bcoo_to_bcsr(
        bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions)
    )


def bcsr_concatenate(operands, *, dimension):
    from morphax.experimental.sparse.bcoo import bcoo_concatenate

    return bcoo_to_bcsr(bcoo_concatenate([o.to_bcoo() for o in operands], dimension=dimension))


def _bcsr_to_elt(mat, axis):
    # `mat`'s buffers are already the per-element values (the mapped axis removed).
    if axis > mat.n_batch:
        raise ValueError(
            f"Cannot map in_axis={axis} for BCSR array with n_batch={mat.n_batch + 1}. in_axes for batched "
            "BCSR operations must correspond to a batch dimension."
        )
    aux = {**mat._info._asdict(), "shape": mat.shape[:axis] + mat.shape[axis + 1 :]}
    return BCSR.tree_unflatten(aux, (mat.data, mat.indices, mat.indptr))


def _bcsr_from_elt(mat, axis_size, axis):
    axis = axis % (mat.ndim + 1)
    if axis > mat.n_batch:
        raise ValueError(f"BCSR: cannot add out_axis={axis} for BCSR array with n_batch={mat.n_batch}.")
    aux = {**mat._info._asdict(), "shape": mat.shape[:axis] + (axis_size,) + mat.shape[axis:]}
    return BCSR.tree_unflatten(aux, (mat.data, mat.indices, mat.indptr))


register_vmappable(BCSR, _bcsr_to_elt, _bcsr_from_elt)
