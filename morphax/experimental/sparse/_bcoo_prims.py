"""The BCOO primitives: conversion to and from dense arrays, extraction at indices, the
sparse-dense and sparse-sparse products, transposition, and the index bookkeeping
(sum_duplicates, sort_indices).

Layout (JAX's): data has shape (*batch, nse, *dense), indices (*batch, nse, n_sparse); entry e of
batch element b is data[b, e] placed at indices[b, e]. Padding entries carry the out-of-bounds
index `shape` in every sparse column and zero data, so every operation may drop them.
"""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core.ad_util import Zero, is_undefined_primal, is_zero, tangent_aval
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


def _layout(indices):
    return indices.ndim - 2, indices.shape[-1]


def _cols(i, cols):
    return tuple(i[:, k] for k in cols)


# ------------------------------------------------------------------------------------ todense


def _todense_impl(data, indices, *, spinfo):
    n_batch, n_sparse = _layout(indices)
    shape = tuple(spinfo.shape)
    data, indices = broadcast_batch(data, indices, shape[:n_batch])

    def one(d, i):
        if n_sparse == 0:
            return d.sum(0)
        out = jnp.zeros(shape[n_batch:], d.dtype)
        return out.at[_cols(i, range(n_sparse))].add(d, mode="drop")

    return nfold_vmap(one, n_batch)(data, indices)


def _todense_abstract(data, indices, *, spinfo):
    return aval(spinfo.shape, data.dtype)


bcoo_todense_p = sparse_primitive("bcoo_todense", _todense_impl, _todense_abstract)


def _todense_jvp(primals, tangents, *, spinfo):
    data, indices = primals
    out = bcoo_todense_p.bind(data, indices, spinfo=spinfo)
    if is_zero(tangents[0]):
        return out, Zero(tangent_aval(aval(spinfo.shape, data.dtype)))
    return out, bcoo_todense_p.bind(tangents[0], indices, spinfo=spinfo)


def _todense_transpose(ct, data, indices, *, spinfo):
    assert is_undefined_primal(data) and not is_undefined_primal(indices)
    if is_zero(ct):
        return [Zero(data.aval), None]
    ct_data = bcoo_extract_p.bind(indices, ct, assume_unique=True)
    if ct_data.shape != data.aval.shape:  # data had size-1 batch dimensions
        n_batch = indices.ndim - 2
        axes = tuple(k for k in range(n_batch) if data.aval.shape[k] == 1 and ct_data.shape[k] != 1)
        ct_data = ct_data.sum(axes, keepdims=True)
    return [ct_data, None]


bcoo_todense_p.jvp = _todense_jvp
bcoo_todense_p.transpose = _todense_transpose
batch_by_vmap(bcoo_todense_p, _todense_impl)


# ------------------------------------------------------------------------------------ extract


def _first_occurrence(i):
    """Mask of the entries whose index was not seen at an earlier position (unbatched)."""
    nse = i.shape[0]
    if nse == 0 or i.shape[1] == 0:
        return jnp.arange(nse) == 0
    order = jnp.lexsort((jnp.arange(nse),) + tuple(i[:, k] for k in reversed(range(i.shape[1]))))
    s = i[order]
    first_sorted = jnp.concatenate([jnp.array([True]), jnp.any(s[1:] != s[:-1], axis=1)])
    return jnp.zeros(nse, bool).at[order].set(first_sorted)


def _extract_impl(indices, mat, *, assume_unique=True):
    n_batch, n_sparse = _layout(indices)
    if indices.shape[:n_batch] != mat.shape[:n_batch]:
        indices = jnp.broadcast_to(indices, mat.shape[:n_batch] + indices.shape[n_batch:])

    def one(i, m):
        if n_sparse == 0:
            d = jnp.broadcast_to(m, (i.shape[0], *m.shape))
        else:
            d = m.at[_cols(i, range(n_sparse))].get(mode="fill", fill_value=0)
        if not assume_unique:
            keep = _first_occurrence(i).reshape((-1,) + (1,) * (d.ndim - 1))
            d = jnp.where(keep, d, jnp.zeros((), d.dtype))
        return d

    return nfold_vmap(one, n_batch)(indices, mat)


def _extract_abstract(indices, mat, *, assume_unique=True):
    n_batch, n_sparse = _layout(indices)
    return aval((*mat.shape[:n_batch], indices.shape[n_batch], *mat.shape[n_batch + n_sparse :]), mat.dtype)


bcoo_extract_p = sparse_primitive("bcoo_extract", _extract_impl, _extract_abstract)


def _extract_jvp(primals, tangents, *, assume_unique=True):
    indices, mat = primals
    out = bcoo_extract_p.bind(indices, mat, assume_unique=assume_unique)
    if is_zero(tangents[1]):
        return out, Zero(tangent_aval(aval(out.shape, out.dtype)))
    return out, bcoo_extract_p.bind(indices, tangents[1], assume_unique=assume_unique)


def _extract_transpose(ct, indices, mat, *, assume_unique=True):
    assert is_undefined_primal(mat) and not is_undefined_primal(indices)
    if is_zero(ct):
        return [None, Zero(mat.aval)]
    if not assume_unique:
        # Entries repeating an earlier index read nothing, so they pass no cotangent back.
        n_batch = indices.ndim - 2
        first = nfold_vmap(_first_occurrence, n_batch)(jnp.asarray(indices))
        ct = jnp.where(
            first.reshape(first.shape + (1,) * (ct.ndim - first.ndim)), ct, jnp.zeros((), ct.dtype)
        )
    return [None, bcoo_todense_p.bind(ct, indices, spinfo=SparseInfo(tuple(mat.aval.shape)))]


bcoo_extract_p.jvp = _extract_jvp
bcoo_extract_p.transpose = _extract_transpose
batch_by_vmap(bcoo_extract_p, _extract_impl)


# ---------------------------------------------------------------------------------- fromdense


def _fromdense_impl(mat, *, nse, n_batch, n_dense, index_dtype):
    n_sparse = mat.ndim - n_batch - n_dense
    sparse_shape = mat.shape[n_batch : n_batch + n_sparse]

    def one(m):
        if n_sparse == 0:
            data = jnp.zeros((nse, *m.shape), m.dtype).at[0].set(m)
            return data, jnp.zeros((nse, 0), index_dtype)
        mask = m != 0
        if n_dense:
            mask = jnp.any(mask, axis=tuple(range(n_sparse, m.ndim)))
        cols = jnp.nonzero(mask, size=nse, fill_value=sparse_shape)
        i = jnp.stack([c.astype(index_dtype) for c in cols], axis=-1)
        return m.at[_cols(i, range(n_sparse))].get(mode="fill", fill_value=0), i

    return list(nfold_vmap(one, n_batch)(mat))


def _fromdense_abstract(mat, *, nse, n_batch, n_dense, index_dtype):
    n_sparse = mat.ndim - n_batch - n_dense
    batch, dense = mat.shape[:n_batch], mat.shape[mat.ndim - n_dense :]
    return [aval((*batch, nse, *dense), mat.dtype), aval((*batch, nse, n_sparse), index_dtype)]


bcoo_fromdense_p = sparse_primitive(
    "bcoo_fromdense", _fromdense_impl, _fromdense_abstract, multiple_results=True
)


def _fromdense_jvp(primals, tangents, **params):
    (mat,), (mat_dot,) = primals, tangents
    data, indices = bcoo_fromdense_p.bind(mat, **params)
    i_t = Zero(tangent_aval(aval(indices.shape, indices.dtype)))
    if is_zero(mat_dot):
        return [data, indices], [Zero(tangent_aval(aval(data.shape, data.dtype))), i_t]
    return [data, indices], [bcoo_extract_p.bind(indices, mat_dot), i_t]


bcoo_fromdense_p.jvp = _fromdense_jvp
batch_by_vmap(bcoo_fromdense_p, _fromdense_impl)


# -------------------------------------------------------------------------------- dot_general


def _split_dims(dimension_numbers, n_batch, n_sparse, ndim):
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in x) for x in (lc, rc, lb, rb))
    if any(d >= n_batch for d in lb):
        raise NotImplementedError(
            "bcoo_dot_general: the batch dimensions of the product must be batch dimensions of "
            f"the sparse operand (n_batch={n_batch}); got lhs batch dimensions {lb}"
        )
    if any(d >= n_batch + n_sparse for d in lc):
        raise NotImplementedError(
            "bcoo_dot_general: contracting over dense dimensions of a sparse operand is not "
            f"supported (n_batch={n_batch}, n_sparse={n_sparse}, contracting {lc})"
        )
    return lc, rc, lb, rb


def _dot_out_shape(shape, rhs_shape, lc, rc, lb, rb):
    free = [d for d in range(len(shape)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(rhs_shape)) if d not in rc and d not in rb]
    for l, r in zip(lc + lb, rc + rb):
        if shape[l] != rhs_shape[r]:
            raise TypeError(
                f"bcoo_dot_general: dimension {l} of the sparse operand (size {shape[l]}) does not "
                f"match dimension {r} of the other operand (size {rhs_shape[r]})"
            )
    return (*(shape[d] for d in lb), *(shape[d] for d in free), *(rhs_shape[d] for d in rfree))


def _dot_impl(
    lhs_data,
    lhs_indices,
    rhs,
    *,
    dimension_numbers,
    lhs_spinfo,
    preferred_element_type=None,
    out_sharding=None,
):
    shape = tuple(lhs_spinfo.shape)
    n_batch, n_sparse = _layout(lhs_indices)
    lc, rc, lb, rb = _split_dims(dimension_numbers, n_batch, n_sparse, len(shape))
    data, indices = broadcast_batch(lhs_data, lhs_indices, shape[:n_batch])
    out_dtype = preferred_element_type or jnp.result_type(data.dtype, rhs.dtype)
    bc = [(l, r) for l, r in zip(lc, rc) if l < n_batch]
    sc = [(l, r) for l, r in zip(lc, rc) if l >= n_batch]
    free_b = [d for d in range(n_batch) if d not in lb and d not in lc]
    perm_b = [*lb, *free_b, *(l for l, _ in bc)]
    data = data.transpose(perm_b + list(range(n_batch, data.ndim)))
    indices = indices.transpose(perm_b + [n_batch, n_batch + 1])
    sc_cols = [l - n_batch for l, _ in sc]
    free_cols = [k for k in range(n_sparse) if k not in sc_cols]
    rhs_free = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    rhs = rhs.transpose([*rb, *(r for _, r in bc), *(r for _, r in sc), *rhs_free])
    free_shape = tuple(shape[n_batch + k] for k in free_cols)
    n_rfree = len(rhs_free)

    def unbatched(d, i, r):
        # Each stored entry multiplies the rhs slice its contracted indices select, and the
        # products are added into the output at its free indices.
        if sc_cols:
            g = r.at[_cols(i, sc_cols)].get(mode="fill", fill_value=0)
        else:
            g = jnp.broadcast_to(r, (d.shape[0], *r.shape))
        n_dense = d.ndim - 1
        prod = d.astype(out_dtype).reshape(d.shape + (1,) * n_rfree) * g.astype(out_dtype).reshape(
            (g.shape[0],) + (1,) * n_dense + g.shape[1:]
        )
        if free_cols:
            out = jnp.zeros((*free_shape, *prod.shape[1:]), out_dtype)
            return out.at[_cols(i, free_cols)].add(prod, mode="drop")
        return prod.sum(0)

    f = unbatched
    for _ in bc:
        f = morphax.vmap(f, in_axes=(0, 0, 0))
    for _ in free_b:
        f = morphax.vmap(f, in_axes=(0, 0, None))
    for _ in lb:
        f = morphax.vmap(f, in_axes=(0, 0, 0))
    out = f(data, indices, rhs)
    if bc:
        start = len(lb) + len(free_b)
        out = out.sum(tuple(range(start, start + len(bc))))
    return out


def _dot_abstract(
    lhs_data,
    lhs_indices,
    rhs,
    *,
    dimension_numbers,
    lhs_spinfo,
    preferred_element_type=None,
    out_sharding=None,
):
    n_batch, n_sparse = _layout(lhs_indices)
    shape = tuple(lhs_spinfo.shape)
    lc, rc, lb, rb = _split_dims(dimension_numbers, n_batch, n_sparse, len(shape))
    dtype = preferred_element_type or jnp.result_type(lhs_data.dtype, rhs.dtype)
    return aval(_dot_out_shape(shape, rhs.shape, lc, rc, lb, rb), dtype)


bcoo_dot_general_p = sparse_primitive("bcoo_dot_general", _dot_impl, _dot_abstract)


def _dot_jvp(primals, tangents, **params):
    data, indices, rhs = primals
    data_dot, _, rhs_dot = tangents
    out = bcoo_dot_general_p.bind(data, indices, rhs, **params)
    t = None
    if not is_zero(data_dot):
        t = bcoo_dot_general_p.bind(data_dot, indices, rhs, **params)
    if not is_zero(rhs_dot):
        u = bcoo_dot_general_p.bind(data, indices, rhs_dot, **params)
        t = u if t is None else t + u
    return out, Zero(tangent_aval(aval(out.shape, out.dtype))) if t is None else t


bcoo_dot_general_p.jvp = _dot_jvp
# The product is bilinear; each cotangent is the transpose of the gather-multiply-scatter
# composition, which costs what the product costs (no dense copy of the sparse operand).
transpose_by_composition(bcoo_dot_general_p, _dot_impl)
batch_by_vmap(bcoo_dot_general_p, _dot_impl)


# ------------------------------------------------------------------------ dot_general_sampled


def _sampled_impl(A, B, indices, *, dimension_numbers):
    return _extract_impl(indices, lax.dot_general(A, B, dimension_numbers))


def _sampled_abstract(A, B, indices, *, dimension_numbers):
    prod = eval_shape_aval(lambda a, b: lax.dot_general(a, b, dimension_numbers), A, B)
    return _extract_abstract(indices, prod)


def eval_shape_aval(fn, *avals):
    out = morphax.eval_shape(fn, *(morphax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals))
    return aval(out.shape, out.dtype)


bcoo_dot_general_sampled_p = sparse_primitive("bcoo_dot_general_sampled", _sampled_impl, _sampled_abstract)
jvp_by_composition(bcoo_dot_general_sampled_p, _sampled_impl)
transpose_by_composition(bcoo_dot_general_sampled_p, _sampled_impl)
batch_by_vmap(bcoo_dot_general_sampled_p, _sampled_impl)


# ------------------------------------------------------------------------------ spdot_general


def _spdot_unbatched(ld, li, rd, ri, lshape, rshape, lc, rc, dtype):
    """Sparse x sparse without batch or dense dimensions: every pair of stored entries whose
    contracted indices agree contributes its product at the pair's free indices (the others
    are padding)."""
    lfree = [d for d in range(len(lshape)) if d not in lc]
    rfree = [d for d in range(len(rshape)) if d not in rc]
    match = jnp.ones((li.shape[0], ri.shape[0]), bool)
    for l, r in zip(lc, rc):
        match = match & (li[:, l][:, None] == ri[:, r][None, :])
    valid_l = jnp.all(li < jnp.array(lshape, li.dtype), axis=1) if lshape else jnp.ones(li.shape[0], bool)
    valid_r = jnp.all(ri < jnp.array(rshape, ri.dtype), axis=1) if rshape else jnp.ones(ri.shape[0], bool)
    match = match & valid_l[:, None] & valid_r[None, :]
    data = jnp.where(match, ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :], 0)
    out_shape = tuple(lshape[d] for d in lfree) + tuple(rshape[d] for d in rfree)
    cols = [jnp.broadcast_to(li[:, d][:, None], match.shape) for d in lfree]
    cols += [jnp.broadcast_to(ri[:, d][None, :], match.shape) for d in rfree]
    idx_dtype = jnp.result_type(li.dtype, ri.dtype)
    if cols:
        idx = jnp.stack(cols, axis=-1).reshape(-1, len(cols)).astype(idx_dtype)
        idx = jnp.where(match.reshape(-1, 1), idx, jnp.array(out_shape, idx_dtype))
    else:
        idx = jnp.zeros((match.size, 0), idx_dtype)
    return data.reshape(-1), idx


def _spdot_impl(
    lhs_data,
    lhs_indices,
    rhs_data,
    rhs_indices,
    *,
    lhs_spinfo,
    rhs_spinfo,
    dimension_numbers,
    preferred_element_type=None,
):
    """Sparse x sparse for operands with equal batch dimensions that are the product's batch
    dimensions (the unbatched kernel mapped over them) and no dense dimensions."""
    (lc, rc), _ = dimension_numbers
    nb = lhs_indices.ndim - 2
    lshape, rshape = tuple(lhs_spinfo.shape), tuple(rhs_spinfo.shape)
    dtype = preferred_element_type or jnp.result_type(lhs_data.dtype, rhs_data.dtype)
    ld, li = broadcast_batch(lhs_data, lhs_indices, lshape[:nb])
    rd, ri = broadcast_batch(rhs_data, rhs_indices, rshape[:nb])
    lc = tuple(d - nb for d in lc)
    rc = tuple(d - nb for d in rc)

    def one(ld, li, rd, ri):
        return _spdot_unbatched(ld, li, rd, ri, lshape[nb:], rshape[nb:], lc, rc, dtype)

    return list(nfold_vmap(one, nb)(ld, li, rd, ri))


def _spdot_abstract(
    lhs_data,
    lhs_indices,
    rhs_data,
    rhs_indices,
    *,
    lhs_spinfo,
    rhs_spinfo,
    dimension_numbers,
    preferred_element_type=None,
):
    (lc, rc), (lb, rb) = dimension_numbers
    nb = lhs_indices.ndim - 2
    batch = tuple(range(nb))
    if (
        rhs_indices.ndim - 2 != nb
        or tuple(lb) != batch
        or tuple(rb) != batch
        or lhs_data.ndim != nb + 1
        or rhs_data.ndim != nb + 1
    ):
        raise NotImplementedError(
            "bcoo_spdot_general: sparse x sparse products need operands with the same batch "
            "dimensions, all of them batch dimensions of the product, and no dense dimensions"
        )
    lshape, rshape = tuple(lhs_spinfo.shape), tuple(rhs_spinfo.shape)
    shape = _dot_out_shape(lshape, rshape, tuple(lc), tuple(rc), tuple(lb), tuple(rb))
    nse = lhs_indices.shape[nb] * rhs_indices.shape[nb]
    dtype = preferred_element_type or jnp.result_type(lhs_data.dtype, rhs_data.dtype)
    idx_dtype = jnp.result_type(lhs_indices.dtype, rhs_indices.dtype)
    return [aval((*shape[:nb], nse), dtype), aval((*shape[:nb], nse, len(shape) - nb), idx_dtype)]


bcoo_spdot_general_p = sparse_primitive(
    "bcoo_spdot_general", _spdot_impl, _spdot_abstract, multiple_results=True
)
jvp_by_composition(bcoo_spdot_general_p, _spdot_impl)
batch_by_vmap(bcoo_spdot_general_p, _spdot_impl)


# ---------------------------------------------------------------------------------- transpose


def _transpose_impl(data, indices, *, permutation, spinfo):
    n_batch, n_sparse = _layout(indices)
    perm = tuple(permutation)
    bp, sp, dp = perm[:n_batch], perm[n_batch : n_batch + n_sparse], perm[n_batch + n_sparse :]
    data = data.transpose((*bp, n_batch, *(d - n_sparse + 1 for d in dp)))
    indices = indices.transpose((*bp, n_batch, n_batch + 1))
    if n_sparse:
        indices = (
            indices[..., jnp.array([d - n_batch for d in sp])]
            if sp != tuple(range(n_batch, n_batch + n_sparse))
            else indices
        )
    return [data, indices]


def validate_permutation(permutation, n_batch, n_sparse, ndim):
    perm = tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(ndim)):
        raise TypeError(f"bcoo_transpose: {perm} is not a permutation of {ndim} dimensions")
    parts = [(0, n_batch), (n_batch, n_batch + n_sparse), (n_batch + n_sparse, ndim)]
    for lo, hi in parts:
        if any(not lo <= p < hi for p in perm[lo:hi]):
            raise NotImplementedError(
                "bcoo_transpose: a permutation must keep batch, sparse and dense dimensions within "
                f"their groups (n_batch={n_batch}, n_sparse={n_sparse}); got {perm}. Use "
                "bcoo_update_layout to change the layout first."
            )
    return perm


def _transpose_abstract(data, indices, *, permutation, spinfo):
    n_batch, n_sparse = _layout(indices)
    perm = validate_permutation(permutation, n_batch, n_sparse, len(spinfo.shape))
    ds, ishape = data.shape, indices.shape
    data_shape = (
        *(ds[p] for p in perm[:n_batch]),
        ds[n_batch],
        *(ds[d - n_sparse + 1] for d in perm[n_batch + n_sparse :]),
    )
    idx_shape = (*(ishape[p] for p in perm[:n_batch]), *ishape[n_batch:])
    return [aval(data_shape, data.dtype), aval(idx_shape, indices.dtype)]


bcoo_transpose_p = sparse_primitive(
    "bcoo_transpose", _transpose_impl, _transpose_abstract, multiple_results=True
)
jvp_by_composition(bcoo_transpose_p, _transpose_impl)
transpose_by_composition(bcoo_transpose_p, _transpose_impl)
batch_by_vmap(bcoo_transpose_p, _transpose_impl)


# ------------------------------------------------------------------- sum_duplicates, sorting


def _sort_order(i):
    """The permutation sorting an unbatched index array lexicographically (row-major order);
    padding (out-of-bounds) entries carry the largest index and so come last."""
    if i.shape[1] == 0:
        return jnp.arange(i.shape[0])
    return jnp.lexsort(tuple(i[:, k] for k in reversed(range(i.shape[1]))))


def _sort_impl(data, indices, *, spinfo):
    n_batch, n_sparse = _layout(indices)
    shape = tuple(spinfo.shape)
    data, indices = broadcast_batch(data, indices, shape[:n_batch])

    def one(d, i):
        i = sentinel(i, shape[n_batch : n_batch + n_sparse])
        order = _sort_order(i)
        return d[order], i[order]

    return list(nfold_vmap(one, n_batch)(data, indices))


def _same_layout_abstract(data, indices, *, spinfo, **_):
    n_batch = indices.ndim - 2
    batch = tuple(spinfo.shape[:n_batch])
    return [
        aval((*batch, *data.shape[n_batch:]), data.dtype),
        aval((*batch, *indices.shape[n_batch:]), indices.dtype),
    ]


def sentinel(i, sparse_shape):
    if not sparse_shape:
        return i
    bound = jnp.array(sparse_shape, i.dtype)
    bad = jnp.any((i >= bound) | (i < 0), axis=-1, keepdims=True)
    return jnp.where(bad, bound, i)


bcoo_sort_indices_p = sparse_primitive(
    "bcoo_sort_indices", _sort_impl, _same_layout_abstract, multiple_results=True
)
jvp_by_composition(bcoo_sort_indices_p, _sort_impl)
transpose_by_composition(bcoo_sort_indices_p, _sort_impl)
batch_by_vmap(bcoo_sort_indices_p, _sort_impl)


def _sum_duplicates_impl(data, indices, *, spinfo, nse):
    n_batch, n_sparse = _layout(indices)
    shape = tuple(spinfo.shape)
    sparse_shape = shape[n_batch : n_batch + n_sparse]
    data, indices = broadcast_batch(data, indices, shape[:n_batch])

    def one(d, i):
        # Sort, number the distinct indices in order, and add each entry into its number's slot;
        # slots past the distinct count (and the padding's) keep the padding index and zero data.
        i = sentinel(i, sparse_shape)
        order = _sort_order(i)
        s, ds = i[order], d[order]
        if i.shape[0] == 0:
            return jnp.zeros((nse, *d.shape[1:]), d.dtype), jnp.zeros((nse, n_sparse), i.dtype)
        new = jnp.concatenate([jnp.array([True]), jnp.any(s[1:] != s[:-1], axis=1)])
        gid = jnp.cumsum(new) - 1
        if sparse_shape:
            pad = jnp.all(s == jnp.array(sparse_shape, i.dtype), axis=1)
            gid = jnp.where(pad, nse, gid)
        bound = jnp.broadcast_to(jnp.array(sparse_shape, i.dtype), (nse, n_sparse))
        out_i = bound.at[gid].set(s, mode="drop")
        out_d = jnp.zeros((nse, *d.shape[1:]), d.dtype).at[gid].add(ds, mode="drop")
        return out_d, out_i

    return list(nfold_vmap(one, n_batch)(data, indices))


def _sum_duplicates_abstract(data, indices, *, spinfo, nse):
    n_batch = indices.ndim - 2
    batch = tuple(spinfo.shape[:n_batch])
    return [
        aval((*batch, nse, *data.shape[n_batch + 1 :]), data.dtype),
        aval((*batch, nse, indices.shape[-1]), indices.dtype),
    ]


bcoo_sum_duplicates_p = sparse_primitive(
    "bcoo_sum_duplicates", _sum_duplicates_impl, _sum_duplicates_abstract, multiple_results=True
)
jvp_by_composition(bcoo_sum_duplicates_p, _sum_duplicates_impl)
transpose_by_composition(bcoo_sum_duplicates_p, _sum_duplicates_impl)
batch_by_vmap(bcoo_sum_duplicates_p, _sum_duplicates_impl)


def count_unique(indices, shape):
    """The largest number of distinct in-bounds indices of any batch element (concrete indices)."""
    idx = np.asarray(indices)
    n_batch, n_sparse = idx.ndim - 2, idx.shape[-1]
    sparse_shape = np.array(shape[n_batch : n_batch + n_sparse])
    flat = idx.reshape(-1, *idx.shape[-2:])
    best = 0
    for i in flat:
        ok = np.all((i < sparse_shape) & (i >= 0), axis=1)
        best = max(best, len(np.unique(i[ok], axis=0)) if n_sparse else int(i.shape[0] > 0))
    return best
