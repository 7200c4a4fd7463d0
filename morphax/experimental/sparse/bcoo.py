"""`BCOO`, the batched coordinate format, and the functions on it that bind the BCOO primitives
(_bcoo_prims.py) or compose them with ordinary operations on the data and index buffers."""

from __future__ import annotations

import operator
import warnings

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.vmap import register_vmappable
from morphax._src.core.trace import Tracer
from morphax._src.tree_util import register_pytree_node_class
from morphax.experimental.sparse import _bcoo_prims as P
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse._bcoo_ops import (  # noqa: F401 - the module's public names
    bcoo_add,
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_conv_general_dilated,
    bcoo_dynamic_slice,
    bcoo_gather,
    bcoo_getitem,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_squeeze,
    relayout,
)
from morphax.experimental.sparse._bcoo_prims import (  # noqa: F401 - the module's public names
    bcoo_dot_general_p,
    bcoo_dot_general_sampled_p,
    bcoo_extract_p,
    bcoo_fromdense_p,
    bcoo_sort_indices_p,
    bcoo_spdot_general_p,
    bcoo_sum_duplicates_p,
    bcoo_todense_p,
    bcoo_transpose_p,
)
from morphax.experimental.sparse.util import (
    SparseEfficiencyError,
    SparseEfficiencyWarning,
    SparseInfo,
    broadcast_batch,
    nfold_vmap,
    prod,
)


def _concrete(x):
    return not isinstance(x, Tracer)


@register_pytree_node_class
class BCOO(JAXSparse):
    """A sparse array in batched coordinate format: ``BCOO((data, indices), shape=shape)`` with
    data (*batch, nse, *dense) and indices (*batch, nse, n_sparse)."""

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices = args
        self.data = jnp.asarray(data)
        self.indices = jnp.asarray(indices)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        super().__init__(args, shape=shape)
        n_batch, n_sparse = self.indices.ndim - 2, self.indices.shape[-1] if self.indices.ndim else 0
        if self.indices.ndim < 2 or self.data.ndim < n_batch + 1 or len(self.shape) < n_batch + n_sparse:
            raise ValueError(
                f"BCOO: inconsistent buffers: data {self.data.shape}, indices {self.indices.shape}, "
                f"shape {self.shape}"
            )

    n_batch = property(lambda self: self.indices.ndim - 2)
    n_sparse = property(lambda self: self.indices.shape[-1])
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
    _info = property(lambda self: SparseInfo(self.shape, self.indices_sorted, self.unique_indices))

    def _nse_axis(self):
        return self.n_batch

    def _repr_extra(self):
        extra = ""
        if self.n_batch:
            extra += f", n_batch={self.n_batch}"
        if self.n_dense:
            extra += f", n_dense={self.n_dense}"
        return extra

    def tree_flatten(self):
        return (self.data, self.indices), self._info._asdict()

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape = tuple(aux["shape"])
        obj.indices_sorted = aux["indices_sorted"]
        obj.unique_indices = aux["unique_indices"]
        return obj

    # ------------------------------------------------------------------ construction

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        if n_dense or n_batch:
            raise NotImplementedError("BCOO.from_scipy_sparse: n_dense and n_batch must be 0")
        mat = mat.tocoo()
        index_dtype = index_dtype or np.int32
        indices = np.stack([mat.row, mat.col], axis=1).astype(index_dtype)
        return cls(
            (jnp.asarray(mat.data), jnp.asarray(indices)),
            shape=mat.shape,
            indices_sorted=False,
            unique_indices=bool(getattr(mat, "has_canonical_format", False)),
        )

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(shape)
        n_sparse = len(shape) - n_dense - n_batch
        data = jnp.zeros((*shape[:n_batch], nse, *shape[n_batch + n_sparse :]), dtype)
        indices = jnp.full(
            (*shape[:n_batch], nse, n_sparse), jnp.array(shape[n_batch : n_batch + n_sparse]), index_dtype
        )
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        if n_batch or n_dense:
            return bcoo_fromdense(
                jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype
            )
        start_row, start_col = max(0, -k), max(0, k)
        n = max(0, min(N - start_row, M - start_col))
        diag = jnp.arange(n, dtype=index_dtype)
        indices = jnp.stack([diag + start_row, diag + start_col], axis=1)
        return cls((jnp.ones(n, dtype), indices), shape=(N, M), indices_sorted=True, unique_indices=True)

    # ------------------------------------------------------------------ conversions

    def todense(self):
        return bcoo_todense(self)

    def sum_duplicates(self, nse=None, remove_zeros=True):
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self):
        return bcoo_sort_indices(self)

    def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient)

    def astype(self, *args, **kwargs):
        return BCOO(
            (self.data.astype(*args, **kwargs), self.indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    def transpose(self, axes=None):
        axes = tuple(range(self.ndim)[::-1]) if axes is None else tuple(axes)
        return bcoo_transpose(self, permutation=axes)

    def reshape(self, *args, **kwargs):
        shape = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
        return bcoo_reshape(self, new_sizes=tuple(kwargs.get("new_sizes", shape)))

    def sum(self, axis=None, keepdims=False):
        axes = (
            tuple(range(self.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
        )
        out = bcoo_reduce_sum(self, axes=tuple(a % self.ndim for a in axes))
        if keepdims:
            out = bcoo_reshape(out, new_sizes=tuple(1 if i in axes else d for i, d in enumerate(self.shape)))
        # A full reduction is a dense scalar, as JAX returns it.
        return out.todense() if out.ndim == 0 else out

    def __getitem__(self, idx):
        return bcoo_getitem(self, idx)

    # ------------------------------------------------------------------ arithmetic

    def __neg__(self):
        return BCOO(
            (-self.data, self.indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    def __pos__(self):
        return self

    def __mul__(self, other):
        if isinstance(other, BCOO):
            return bcoo_multiply_sparse(self, other)
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        if other.ndim == 0:
            return BCOO(
                (self.data * other, self.indices),
                shape=self.shape,
                indices_sorted=self.indices_sorted,
                unique_indices=self.unique_indices,
            )
        return multiply_dense(self, other)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __truediv__(self, other):
        if isinstance(other, JAXSparse):
            raise NotImplementedError(_DIV_BY_SPARSE)
        other = jnp.asarray(other)
        if other.ndim == 0:
            return BCOO(
                (self.data / other, self.indices),
                shape=self.shape,
                indices_sorted=self.indices_sorted,
                unique_indices=self.unique_indices,
            )
        return multiply_dense(self, 1 / other)

    def __rtruediv__(self, other):
        raise NotImplementedError(_DIV_BY_SPARSE)

    def _unique(self):
        return self if self.unique_indices else bcoo_sum_duplicates(self, nse=self.nse)

    def __abs__(self):
        # |a + b| is not |a| + |b|: entries at one index are merged first.
        m = self._unique()
        return BCOO(
            (abs(m.data), m.indices), shape=m.shape, indices_sorted=m.indices_sorted, unique_indices=True
        )

    def __pow__(self, y):
        y = operator.index(y)
        if y <= 0:
            raise NotImplementedError(
                f"sparse rule for integer_pow with non-positive exponent {y} is not implemented because it "
                "would result in dense output. If this is your intent, use sparse.todense() to convert your "
                "argument to a dense array."
            )
        m = self._unique()
        return BCOO(
            (m.data**y, m.indices), shape=m.shape, indices_sorted=m.indices_sorted, unique_indices=True
        )

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))

    def __add__(self, other):
        if isinstance(other, BCOO):
            return bcoo_add(self, other)
        if isinstance(other, JAXSparse):
            return NotImplemented
        return self.todense() + other

    def __matmul__(self, other):
        if isinstance(other, JAXSparse):
            if not isinstance(other, BCOO):
                return NotImplemented
            return bcoo_dot_general(self, other, dimension_numbers=_matmul_dims(self.ndim, other.ndim))
        other = jnp.asarray(other)
        if other.ndim > 2 and all(d == 1 for d in other.shape[:-2]):
            # Broadcasting matmul against size-1 batch dimensions: the product with the matrix,
            # broadcast to jnp.matmul's batch shape.
            batch = np.broadcast_shapes(self.shape[:-2], other.shape[:-2])
            out = self @ other.reshape(other.shape[-2:])
            return jnp.broadcast_to(out, (*batch, *out.shape[-2:]))
        return bcoo_dot_general(self, other, dimension_numbers=_matmul_dims(self.ndim, other.ndim))

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        return bcoo_dot_general(other, self, dimension_numbers=_matmul_dims(other.ndim, self.ndim))


_DIV_BY_SPARSE = (
    "Division by a sparse array is not implemented because it would result in dense output. If this is "
    "your intent, use sparse.todense() to convert your arguments to a dense array."
)


def _matmul_dims(lhs_ndim, rhs_ndim):
    if lhs_ndim == 0 or rhs_ndim == 0:
        raise ValueError("matmul: operands must have at least one dimension")
    if rhs_ndim == 1:
        return ((lhs_ndim - 1,), (0,)), ((), ())
    if lhs_ndim == 1:
        return ((0,), (rhs_ndim - 2,)), ((), ())
    if rhs_ndim == 2:  # leading dimensions of the lhs are free: (..., n, k) @ (k, m)
        return ((lhs_ndim - 1,), (0,)), ((), ())
    if lhs_ndim != rhs_ndim:
        raise NotImplementedError("sparse matmul with batch dimensions needs operands of equal rank")
    batch = tuple(range(lhs_ndim - 2))
    return ((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch)


# ------------------------------------------------------------------------- primitive wrappers


def bcoo_todense(mat, *, spinfo=None):
    """The dense array of a BCOO (or of ``(data, indices)`` with `spinfo`)."""
    if isinstance(mat, BCOO):
        return P.bcoo_todense_p.bind(mat.data, mat.indices, spinfo=mat._info)
    data, indices = mat
    return P.bcoo_todense_p.bind(jnp.asarray(data), jnp.asarray(indices), spinfo=_spinfo(spinfo))


def _spinfo(spinfo):
    if isinstance(spinfo, SparseInfo):
        return spinfo
    return SparseInfo(tuple(spinfo))


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """A BCOO holding the nonzeros of `mat`; `nse` (static) defaults to the largest count of
    nonzeros of a batch element, which needs a concrete `mat`."""
    mat = jnp.asarray(mat)
    n_sparse = mat.ndim - n_batch - n_dense
    if n_sparse < 0 or n_batch < 0 or n_dense < 0:
        raise ValueError(
            f"bcoo_fromdense: invalid n_batch={n_batch}, n_dense={n_dense} for shape {mat.shape}"
        )
    if nse is None:
        if not _concrete(mat):
            raise ValueError(
                "bcoo_fromdense: nse must be given when the array is traced (under jit, vmap or "
                "grad); it is the static number of stored elements"
            )
        m = np.asarray(mat) != 0
        m = m.any(axis=tuple(range(mat.ndim - n_dense, mat.ndim))) if n_dense else m
        m = m.reshape(*mat.shape[:n_batch], -1)
        nse = int(m.sum(-1).max()) if m.size else 0
    nse = int(nse) if not isinstance(nse, Tracer) else operator.index(nse)
    data, indices = P.bcoo_fromdense_p.bind(
        mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=np.dtype(index_dtype)
    )
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr, arr, *, assume_unique=None):
    """A BCOO with `sparr`'s indices and `arr`'s values there; with assume_unique=False an
    index stored more than once takes the value at its first entry only (so that todense gives
    `arr` back where `sparr` has entries)."""
    if not isinstance(sparr, BCOO):
        raise TypeError(f"First argument to bcoo_extract should be a BCOO array. Got {type(sparr)=}")
    indices, info = sparr.indices, sparr._info
    if assume_unique is None:
        assume_unique = sparr.unique_indices
    arr = jnp.asarray(arr)
    data = P.bcoo_extract_p.bind(indices, arr, assume_unique=bool(assume_unique))
    return BCOO(
        (data, indices),
        shape=arr.shape,
        indices_sorted=info.indices_sorted,
        unique_indices=info.unique_indices,
    )


def bcoo_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """dot_general with a BCOO operand: sparse x dense and dense x sparse give dense arrays,
    sparse x sparse a BCOO."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        batch = tuple(range(lhs.n_batch))
        if lhs.n_dense or rhs.n_dense or lhs.n_batch != rhs.n_batch or dn[1] != (batch, batch):
            # Outside the sparse-sparse kernel's layouts the product densifies the right operand
            # (the result is then a dense array).
            return bcoo_dot_general(lhs, rhs.todense(), dimension_numbers=dn, preferred_element_type=pet)
        data, indices = P.bcoo_spdot_general_p.bind(
            lhs.data,
            lhs.indices,
            rhs.data,
            rhs.indices,
            lhs_spinfo=lhs._info,
            rhs_spinfo=rhs._info,
            dimension_numbers=dn,
            preferred_element_type=pet,
        )
        shape = P._dot_out_shape(lhs.shape, rhs.shape, dn[0][0], dn[0][1], batch, batch)
        # As JAX: the pair products are merged to at most one entry per output position.
        out_nse = min(data.shape[lhs.n_batch], prod(shape[lhs.n_batch :]))
        return bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=out_nse)
    if isinstance(lhs, BCOO):
        return P.bcoo_dot_general_p.bind(
            lhs.data,
            lhs.indices,
            jnp.asarray(rhs),
            dimension_numbers=dn,
            lhs_spinfo=lhs._info,
            preferred_element_type=pet,
        )
    if isinstance(rhs, BCOO):
        lhs = jnp.asarray(lhs)
        swapped = ((rc, lc), (rb, lb))
        out = P.bcoo_dot_general_p.bind(
            rhs.data,
            rhs.indices,
            lhs,
            dimension_numbers=swapped,
            lhs_spinfo=rhs._info,
            preferred_element_type=pet,
        )
        # The swapped product is (batch, rhs free, lhs free); dot_general's order is (batch, lhs
        # free, rhs free).
        nb = len(lb)
        n_rfree = rhs.ndim - len(rc) - len(rb)
        n_lfree = lhs.ndim - len(lc) - len(lb)
        perm = (*range(nb), *range(nb + n_rfree, nb + n_rfree + n_lfree), *range(nb, nb + n_rfree))
        return out.transpose(perm)
    return lax.dot_general(lhs, rhs, dn, preferred_element_type=pet)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
    """The entries of ``dot_general(A, B)`` at `indices` (the data of a BCOO with them)."""
    return P.bcoo_dot_general_sampled_p.bind(
        jnp.asarray(A), jnp.asarray(B), jnp.asarray(indices), dimension_numbers=dimension_numbers
    )


def bcoo_transpose(mat, *, permutation):
    perm = P.validate_permutation(permutation, mat.n_batch, mat.n_sparse, mat.ndim)
    data, indices = P.bcoo_transpose_p.bind(mat.data, mat.indices, permutation=perm, spinfo=mat._info)
    shape = tuple(mat.shape[p] for p in perm)
    return BCOO((data, indices), shape=shape, unique_indices=mat.unique_indices)


def bcoo_sort_indices(mat):
    data, indices = P.bcoo_sort_indices_p.bind(mat.data, mat.indices, spinfo=mat._info)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices)


def bcoo_sum_duplicates(mat, *, nse=None):
    """`mat` with the entries at equal indices added into one (sorted); `nse` defaults to the
    number of distinct indices when they are concrete, else to the current nse."""
    if nse is None:
        nse = P.count_unique(mat.indices, mat.shape) if _concrete(mat.indices) else mat.nse
    data, indices = P.bcoo_sum_duplicates_p.bind(mat.data, mat.indices, spinfo=mat._info, nse=int(nse))
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_multiply_dense(sp_mat, v):
    """The data of the elementwise product of a BCOO and a dense array broadcastable to its
    shape, at the BCOO's indices (JAX returns the data; `sp_mat * v` wraps it in a BCOO)."""
    v = jnp.asarray(v)
    shape = sp_mat.shape
    if v.ndim > len(shape) or np.broadcast_shapes(v.shape, shape) != shape:
        raise NotImplementedError(
            "multiplication between sparse and dense is only implemented for cases where the output "
            f"shape matches the sparse matrix shape. Got shape={shape}, v.shape={v.shape}"
        )
    v = v.reshape((1,) * (len(shape) - v.ndim) + v.shape)
    nb, ns = sp_mat.n_batch, sp_mat.n_sparse
    # Size-1 sparse dimensions of `v` are read at index 0; its batch and dense dimensions
    # broadcast against the data's.
    v_b = jnp.broadcast_to(v, shape[:nb] + v.shape[nb:])
    idx = sp_mat.indices
    one = [k for k in range(ns) if v.shape[nb + k] == 1 and shape[nb + k] != 1]
    if one:
        keep_pad = idx >= jnp.array(shape[nb : nb + ns], idx.dtype)
        mask = jnp.array([k in one for k in range(ns)])
        idx = jnp.where(mask & ~keep_pad, 0, idx)
    vals = P.bcoo_extract_p.bind(jnp.broadcast_to(idx, shape[:nb] + idx.shape[nb:]), v_b, assume_unique=True)
    return sp_mat.data * vals


def multiply_dense(sp_mat, v):
    """``sp_mat * v`` for a dense `v`: a BCOO with `sp_mat`'s indices."""
    return BCOO(
        (bcoo_multiply_dense(sp_mat, v), sp_mat.indices),
        shape=sp_mat.shape,
        indices_sorted=sp_mat.indices_sorted,
        unique_indices=sp_mat.unique_indices,
    )


def bcoo_multiply_sparse(lhs, rhs):
    """Elementwise product of two BCOOs of one shape, stored at `lhs`'s indices: each entry of
    `lhs` times the sum of `rhs`'s entries at the same index."""
    if lhs.shape != rhs.shape:
        raise ValueError(f"bcoo_multiply_sparse: shapes {lhs.shape} and {rhs.shape} differ")
    if (lhs.n_batch, lhs.n_dense) != (rhs.n_batch, rhs.n_dense):
        raise NotImplementedError("bcoo_multiply_sparse: operands must have the same n_batch and n_dense")
    nb = lhs.n_batch
    ld, li = broadcast_batch(lhs.data, lhs.indices, lhs.shape[:nb])
    rd, ri = broadcast_batch(rhs.data, rhs.indices, rhs.shape[:nb])
    bound = jnp.array(lhs.shape[nb : nb + lhs.n_sparse], li.dtype)

    def one(ld, li, rd, ri):
        valid = jnp.all(li < bound, axis=1) if lhs.n_sparse else jnp.ones(li.shape[0], bool)
        match = jnp.all(li[:, None, :] == ri[None, :, :], axis=-1) & valid[:, None]
        other = jnp.tensordot(match.astype(rd.dtype), rd, axes=1)
        return ld * other

    data = nfold_vmap(one, nb)(ld, li, rd, ri)
    return BCOO(
        (data, li), shape=lhs.shape, indices_sorted=lhs.indices_sorted, unique_indices=lhs.unique_indices
    )


def bcoo_update_layout(mat, *, n_batch=None, n_dense=None, on_inefficient="error"):
    """`mat` with `n_batch` batch and `n_dense` dense dimensions. Moving dimensions between the
    groups goes through the dense array, with nse the bound JAX's layout change gives."""
    n_batch = mat.n_batch if n_batch is None else int(n_batch)
    n_dense = mat.n_dense if n_dense is None else int(n_dense)
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    if n_batch + n_dense > mat.ndim:
        raise ValueError(f"update_layout: n_batch={n_batch} + n_dense={n_dense} exceeds ndim={mat.ndim}")
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(
            f"update_layout: on_inefficient must be 'error', 'warn' or None, got {on_inefficient!r}"
        )

    def inefficient(msg):
        # Moving sparse dimensions of size > 1 into the batch or dense groups stores every
        # position of those dimensions explicitly.
        if on_inefficient == "error":
            raise SparseEfficiencyError(
                f"{msg} To disable this error, set the on_inefficient argument of bcoo_update_layout to 'warn' or None."
            )
        if on_inefficient == "warn":
            warnings.warn(
                f"{msg} To disable this warning, set the on_inefficient argument of bcoo_update_layout to None.",
                SparseEfficiencyWarning,
                stacklevel=3,
            )

    shape = mat.shape
    if n_dense > mat.n_dense and any(d > 1 for d in shape[mat.ndim - n_dense : mat.ndim - mat.n_dense]):
        inefficient(
            f"For matrix of shape {shape}, increasing n_dense from {mat.n_dense} to {n_dense} results in inefficient storage."
        )
    if n_batch > mat.n_batch and any(d > 1 for d in shape[mat.n_batch : n_batch]):
        inefficient(
            f"For matrix of shape {shape}, increasing n_batch from {mat.n_batch} to {n_batch} results in inefficient storage."
        )
    # Entries per new batch element: each old entry lands in one new batch element and expands to
    # the dense block of the dimensions leaving the dense group.
    return relayout(mat, n_batch, n_dense)


# ------------------------------------------------------------------------------------- vmap
# vmap maps a BCOO along one of its batch dimensions (its data and indices share them): each
# element is the BCOO of the remaining dimensions, and a BCOO result gains the mapped dimension
# as a batch dimension.


def _bcoo_to_elt(mat, axis):
    # `mat`'s buffers are already the per-element values (the mapped axis removed).
    if axis > mat.n_batch:
        raise ValueError(
            f"Cannot map in_axis={axis} for BCOO array with n_batch={mat.n_batch + 1}. in_axes for batched "
            "BCOO operations must correspond to a batch dimension."
        )
    return BCOO.tree_unflatten(
        {**mat._info._asdict(), "shape": mat.shape[:axis] + mat.shape[axis + 1 :]}, (mat.data, mat.indices)
    )


def _bcoo_from_elt(mat, axis_size, axis):
    axis = axis % (mat.ndim + 1)
    if axis > mat.n_batch:
        raise ValueError(
            f"BCOO: cannot add out_axis={axis} for BCOO array with n_batch={mat.n_batch}. BCOO batch axes "
            "must be a contiguous block of leading dimensions."
        )
    shape = mat.shape[:axis] + (axis_size,) + mat.shape[axis:]
    return BCOO.tree_unflatten({**mat._info._asdict(), "shape": shape}, (mat.data, mat.indices))


register_vmappable(BCOO, _bcoo_to_elt, _bcoo_from_elt)
