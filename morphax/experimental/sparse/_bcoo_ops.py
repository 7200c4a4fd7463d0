"""Shape operations on BCOO arrays, composed from the primitives and ordinary operations on the
data and index buffers: reshape, slicing and indexing, concatenation, broadcasting, squeezing,
reversal, reductions, addition and convolution."""

from __future__ import annotations

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax.experimental.sparse import _bcoo_prims as P
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse.util import broadcast_batch, prod


def _bound(mat):
    return jnp.array(mat.shape[mat.n_batch : mat.n_batch + mat.n_sparse], mat.indices.dtype)


def _mark_padding(indices, keep, bound):
    """Indices with the entries not kept set to the padding index."""
    return jnp.where(keep[..., None], indices, bound)


def _fit_nse(mat):
    """`mat` with at most one entry per position of its sparse dimensions (as JAX's slicing
    gives): more stored elements than positions are merged by summing duplicates."""
    positions = prod(mat.shape[mat.n_batch : mat.n_batch + mat.n_sparse])
    if mat.nse <= positions:
        return mat
    data, indices = P.bcoo_sum_duplicates_p.bind(mat.data, mat.indices, spinfo=mat._info, nse=positions)
    return type(mat)((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_reshape(mat, *, new_sizes, dimensions=None):
    """Reshape keeping the batch, sparse and dense groups: the new shape must split into a prefix
    of the batch size, then the sparse size, then the dense size."""
    if dimensions is not None:
        raise NotImplementedError("bcoo_reshape: dimensions is not supported")
    new_sizes = tuple(int(d) for d in new_sizes)
    if -1 in new_sizes:
        known = prod(d for d in new_sizes if d != -1)
        new_sizes = tuple(mat.size // known if d == -1 else d for d in new_sizes)
    if prod(new_sizes) != mat.size:
        raise TypeError(f"bcoo_reshape: cannot reshape {mat.shape} to {new_sizes}")
    nb, ns = mat.n_batch, mat.n_sparse
    batch_size, dense_size = prod(mat.shape[:nb]), prod(mat.shape[nb + ns :])
    n = len(new_sizes)
    nb_new = 0 if nb == 0 else next((i for i in range(n + 1) if prod(new_sizes[:i]) == batch_size), None)
    ns_end = (
        n
        if mat.n_dense == 0
        else next((i for i in range(n, (nb_new or 0) - 1, -1) if prod(new_sizes[i:]) == dense_size), None)
    )
    if nb_new is None or ns_end is None or ns_end < nb_new:
        raise NotImplementedError(
            f"bcoo_reshape: {mat.shape} -> {new_sizes} mixes batch, sparse and dense dimensions "
            f"(n_batch={nb}, n_dense={mat.n_dense}); use update_layout first"
        )
    new_batch, new_sparse, new_dense = new_sizes[:nb_new], new_sizes[nb_new:ns_end], new_sizes[ns_end:]
    data, idx = broadcast_batch(mat.data, mat.indices, mat.shape[:nb])
    data = data.reshape(*new_batch, mat.nse, *new_dense)
    idx = idx.reshape(*new_batch, mat.nse, ns)
    sparse_shape = mat.shape[nb : nb + ns]
    valid = (
        jnp.all(idx < jnp.array(sparse_shape, idx.dtype), axis=-1) if ns else jnp.ones(idx.shape[:-1], bool)
    )
    if ns:
        flat = jnp.ravel_multi_index(tuple(idx[..., k] for k in range(ns)), sparse_shape, mode="clip")
    else:
        flat = jnp.zeros(idx.shape[:-1], idx.dtype)
    if new_sparse:
        cols = jnp.unravel_index(flat, new_sparse)
        new_idx = jnp.stack([c.astype(idx.dtype) for c in cols], axis=-1)
        new_idx = _mark_padding(new_idx, valid, jnp.array(new_sparse, idx.dtype))
    else:
        new_idx = jnp.zeros((*idx.shape[:-1], 0), idx.dtype)
        data = jnp.where(valid.reshape(valid.shape + (1,) * len(new_dense)), data, 0)
    return type(mat)(
        (data, new_idx), shape=new_sizes, indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices
    )


def bcoo_slice(mat, *, start_indices, limit_indices, strides=None):
    nb, ns = mat.n_batch, mat.n_sparse
    start = tuple(int(s) for s in start_indices)
    limit = tuple(int(s) for s in limit_indices)
    strides = (1,) * mat.ndim if strides is None else tuple(int(s) for s in strides)
    if len(start) != mat.ndim or len(limit) != mat.ndim or len(strides) != mat.ndim:
        raise ValueError(f"bcoo_slice: indices must have length {mat.ndim}")
    new_shape = tuple(max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(start, limit, strides))
    data, idx = broadcast_batch(mat.data, mat.indices, mat.shape[:nb])
    bsl = tuple(slice(lo, hi, st) for lo, hi, st in zip(start[:nb], limit[:nb], strides[:nb]))
    dsl = tuple(
        slice(lo, hi, st) for lo, hi, st in zip(start[nb + ns :], limit[nb + ns :], strides[nb + ns :])
    )
    data = data[(*bsl, slice(None), *dsl)]
    idx = idx[(*bsl, slice(None), slice(None))]
    if ns:
        lo = jnp.array(start[nb : nb + ns], idx.dtype)
        hi = jnp.array(limit[nb : nb + ns], idx.dtype)
        st = jnp.array(strides[nb : nb + ns], idx.dtype)
        keep = jnp.all((idx >= lo) & (idx < hi) & ((idx - lo) % st == 0), axis=-1)
        new_idx = _mark_padding((idx - lo) // st, keep, jnp.array(new_shape[nb : nb + ns], idx.dtype))
        data = jnp.where(keep.reshape(keep.shape + (1,) * (data.ndim - keep.ndim)), data, 0)
        idx = new_idx
    out = type(mat)(
        (data, idx), shape=new_shape, indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices
    )
    return _fit_nse(out)


def bcoo_dynamic_slice(mat, start_indices, slice_sizes):
    """A slice at run-time offsets (clamped as lax.dynamic_slice clamps them)."""
    nb, ns = mat.n_batch, mat.n_sparse
    sizes = tuple(int(s) for s in slice_sizes)
    starts = [jnp.clip(jnp.asarray(s), 0, d - z) for s, d, z in zip(start_indices, mat.shape, sizes)]
    data, idx = broadcast_batch(mat.data, mat.indices, mat.shape[:nb])
    if nb:
        data = lax.dynamic_slice(
            data, (*starts[:nb], *([0] * (data.ndim - nb))), (*sizes[:nb], *data.shape[nb:])
        )
        idx = lax.dynamic_slice(idx, (*starts[:nb], 0, 0), (*sizes[:nb], *idx.shape[nb:]))
    if mat.n_dense:
        zeros = [0] * (nb + 1)
        data = lax.dynamic_slice(
            data, (*zeros, *starts[nb + ns :]), (*data.shape[: nb + 1], *sizes[nb + ns :])
        )
    if ns:
        lo = jnp.stack([s.astype(idx.dtype) for s in starts[nb : nb + ns]])
        size = jnp.array(sizes[nb : nb + ns], idx.dtype)
        keep = jnp.all((idx >= lo) & (idx < lo + size), axis=-1)
        idx = _mark_padding(idx - lo, keep, size)
        data = jnp.where(keep.reshape(keep.shape + (1,) * (data.ndim - keep.ndim)), data, 0)
    out = type(mat)(
        (data, idx), shape=sizes, indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices
    )
    return _fit_nse(out)


def bcoo_squeeze(arr, *, dimensions):
    dims = sorted({d % arr.ndim for d in dimensions})
    if any(arr.shape[d] != 1 for d in dims):
        raise ValueError(f"bcoo_squeeze: dimensions {dims} of shape {arr.shape} are not all of size 1")
    nb, ns = arr.n_batch, arr.n_sparse
    data, idx = broadcast_batch(arr.data, arr.indices, arr.shape[:nb])
    bd = [d for d in dims if d < nb]
    sd = [d - nb for d in dims if nb <= d < nb + ns]
    dd = [d - ns + 1 for d in dims if d >= nb + ns]
    data = data.squeeze(tuple(bd + dd)) if bd or dd else data
    idx = idx.squeeze(tuple(bd)) if bd else idx
    if sd:
        idx = idx[..., jnp.array([k for k in range(ns) if k not in sd], dtype=np.int32)]
    shape = tuple(d for i, d in enumerate(arr.shape) if i not in dims)
    return type(arr)(
        (data, idx), shape=shape, indices_sorted=arr.indices_sorted, unique_indices=arr.unique_indices
    )


def bcoo_rev(operand, dimensions):
    nb, ns = operand.n_batch, operand.n_sparse
    data, idx = broadcast_batch(operand.data, operand.indices, operand.shape[:nb])
    dims = [d % operand.ndim for d in dimensions]
    flip_data = [d for d in dims if d < nb] + [d - ns + 1 for d in dims if d >= nb + ns]
    if flip_data:
        data = jnp.flip(data, flip_data)
    bdims = [d for d in dims if d < nb]
    if bdims:
        idx = jnp.flip(idx, bdims)
    sd = [d - nb for d in dims if nb <= d < nb + ns]
    if sd:
        size = jnp.array(operand.shape[nb : nb + ns], idx.dtype)
        flipped = jnp.where(jnp.array([k in sd for k in range(ns)]), size - 1 - idx, idx)
        idx = jnp.where(jnp.all(idx < size, axis=-1, keepdims=True), flipped, size)
    return type(operand)((data, idx), shape=operand.shape, unique_indices=operand.unique_indices)


def bcoo_concatenate(operands, *, dimension):
    """Concatenation along a batch dimension (stacks the buffers, padding nse to the largest) or a
    sparse dimension (offsets each operand's indices and joins the entries)."""
    operands = list(operands)
    ref = operands[0]
    dimension = dimension % ref.ndim
    if any((o.n_batch, o.n_dense, o.ndim) != (ref.n_batch, ref.n_dense, ref.ndim) for o in operands):
        raise ValueError("bcoo_concatenate: operands must have the same n_batch, n_dense and rank")
    nb, ns = ref.n_batch, ref.n_sparse
    shape = list(ref.shape)
    shape[dimension] = sum(o.shape[dimension] for o in operands)
    if dimension >= nb + ns:
        raise NotImplementedError("bcoo_concatenate along a dense dimension is not supported")
    if dimension < nb:
        nse = max(o.nse for o in operands)
        datas, idxs = [], []
        for o in operands:
            d, i = broadcast_batch(o.data, o.indices, o.shape[:nb])
            pad = nse - o.nse
            if pad:
                d = jnp.concatenate(
                    [d, jnp.zeros((*d.shape[:nb], pad, *d.shape[nb + 1 :]), d.dtype)], axis=nb
                )
                fill = jnp.broadcast_to(_bound(o), (*i.shape[:nb], pad, ns))
                i = jnp.concatenate([i, fill.astype(i.dtype)], axis=nb)
            datas.append(d)
            idxs.append(i)
        data, idx = jnp.concatenate(datas, axis=dimension), jnp.concatenate(idxs, axis=dimension)
        return type(ref)((data, idx), shape=shape)
    k = dimension - nb
    offset = 0
    datas, idxs = [], []
    new_bound = jnp.array(shape[nb : nb + ns], ref.indices.dtype)
    for o in operands:
        d, i = broadcast_batch(o.data, o.indices, o.shape[:nb])
        valid = jnp.all(i < _bound(o), axis=-1, keepdims=True)
        shifted = i.at[..., k].add(offset)
        idxs.append(jnp.where(valid, shifted, new_bound).astype(ref.indices.dtype))
        datas.append(d)
        offset += o.shape[dimension]
    return type(ref)((jnp.concatenate(datas, axis=nb), jnp.concatenate(idxs, axis=nb)), shape=shape)


def bcoo_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    """broadcast_in_dim of a BCOO: new leading dimensions become batch dimensions, trailing new
    ones dense dimensions; size-1 batch and dense dimensions may expand."""
    shape = tuple(int(d) for d in shape)
    bdims = tuple(int(d) for d in broadcast_dimensions)
    nb, ns = mat.n_batch, mat.n_sparse
    if len(bdims) != mat.ndim:
        raise ValueError("bcoo_broadcast_in_dim: broadcast_dimensions must have one entry per dimension")
    sparse_out = bdims[nb : nb + ns]
    if any(mat.shape[nb + k] != shape[d] for k, d in enumerate(sparse_out)):
        raise NotImplementedError("bcoo_broadcast_in_dim: sparse dimensions cannot be expanded")
    if ns and list(sparse_out) != list(range(sparse_out[0], sparse_out[0] + ns)):
        raise NotImplementedError("bcoo_broadcast_in_dim: sparse dimensions must stay contiguous")
    lo = sparse_out[0] if ns else (bdims[nb] if nb < mat.ndim else len(shape))
    if not ns:
        lo = next((d for d in bdims[nb:]), len(shape))
    new_nb, new_dense_start = lo, lo + ns
    data, idx = broadcast_batch(mat.data, mat.indices, mat.shape[:nb])
    if any(d >= new_nb for d in bdims[:nb]) or any(d < new_dense_start for d in bdims[nb + ns :]):
        raise NotImplementedError("bcoo_broadcast_in_dim: batch/dense dimensions cannot change groups")
    batch_shape = shape[:new_nb]
    dense_shape = shape[new_dense_start:]
    data_shape = (*batch_shape, mat.nse, *dense_shape)
    data_dims = (*bdims[:nb], new_nb, *(d - ns + 1 for d in bdims[nb + ns :]))
    data = lax.broadcast_in_dim(data, data_shape, data_dims)
    idx = lax.broadcast_in_dim(idx, (*batch_shape, mat.nse, ns), (*bdims[:nb], new_nb, new_nb + 1))
    return type(mat)(
        (data, idx), shape=shape, indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices
    )


def bcoo_reduce_sum(mat, *, axes):
    """Sum over `axes`: dense axes sum the data, sparse axes drop their index column (the result
    may then hold duplicates), batch axes join their elements' entries into one."""
    axes = sorted({a % mat.ndim for a in axes})
    nb, ns = mat.n_batch, mat.n_sparse
    data, idx = broadcast_batch(mat.data, mat.indices, mat.shape[:nb])
    dense_axes = [a - ns + 1 for a in axes if a >= nb + ns]
    if dense_axes:
        data = data.sum(tuple(dense_axes))
    sparse_axes = [a - nb for a in axes if nb <= a < nb + ns]
    if sparse_axes:
        valid = jnp.all(idx < _bound(mat), axis=-1)
        data = jnp.where(valid.reshape(valid.shape + (1,) * (data.ndim - valid.ndim)), data, 0)
        keep = [k for k in range(ns) if k not in sparse_axes]
        idx = idx[..., jnp.array(keep, dtype=np.int32)] if keep else idx[..., :0]
    batch_axes = [a for a in axes if a < nb]
    if batch_axes:
        rest = [a for a in range(nb) if a not in batch_axes]
        perm = (*rest, *batch_axes)
        data = data.transpose((*perm, *range(nb, data.ndim)))
        idx = idx.transpose((*perm, nb, nb + 1))
        new_b = tuple(data.shape[: len(rest)])
        joined = prod(data.shape[len(rest) : nb + 1])  # the summed batch elements' entries
        data = data.reshape(*new_b, joined, *data.shape[nb + 1 :])
        idx = idx.reshape(*new_b, joined, idx.shape[-1])
    shape = tuple(d for i, d in enumerate(mat.shape) if i not in axes)
    return type(mat)((data, idx), shape=shape)


def bcoo_add(lhs, rhs):
    """Sum of two BCOOs of one shape and layout: their entries joined (duplicates allowed)."""
    if lhs.shape != rhs.shape:
        raise ValueError(f"bcoo add: shapes {lhs.shape} and {rhs.shape} differ")
    if (lhs.n_batch, lhs.n_dense) != (rhs.n_batch, rhs.n_dense):
        return lhs.todense() + rhs.todense()
    if lhs.indices is rhs.indices:  # one sparsity pattern (x + 2 * x): add the data
        return type(lhs)(
            (lhs.data + rhs.data, lhs.indices),
            shape=lhs.shape,
            indices_sorted=lhs.indices_sorted,
            unique_indices=lhs.unique_indices,
        )
    nb = lhs.n_batch
    ld, li = broadcast_batch(lhs.data, lhs.indices, lhs.shape[:nb])
    rd, ri = broadcast_batch(rhs.data, rhs.indices, rhs.shape[:nb])
    dtype = jnp.result_type(ld.dtype, rd.dtype)
    data = jnp.concatenate([ld.astype(dtype), rd.astype(dtype)], axis=nb)
    idx = jnp.concatenate([li, ri.astype(li.dtype)], axis=nb)
    return type(lhs)((data, idx), shape=lhs.shape)


def bcoo_gather(
    operand,
    start_indices,
    dimension_numbers,
    slice_sizes,
    *,
    unique_indices=False,
    indices_are_sorted=False,
    mode=None,
    fill_value=None,
):
    """lax.gather of a BCOO: one dynamic slice of the operand per row of `start_indices` (mapped
    with vmap, so the slices become a leading batch dimension), the collapsed dimensions squeezed,
    and the dimensions ordered as lax.gather orders them. Start indices are clamped into range
    (the "clip" and "promise_in_bounds" modes); "fill" is not supported."""
    import morphax

    mode_name = str(getattr(mode, "name", mode) or "promise_in_bounds").lower()
    if not any(m in mode_name for m in ("promise_in_bounds", "clip")):
        raise NotImplementedError(f"bcoo_gather: mode={mode!r} is not supported")
    start_indices = jnp.asarray(start_indices)
    out_shape = morphax.eval_shape(
        lambda o, i: lax.gather(o, i, dimension_numbers, slice_sizes, mode=mode, fill_value=fill_value),
        morphax.ShapeDtypeStruct(operand.shape, operand.dtype),
        morphax.ShapeDtypeStruct(start_indices.shape, start_indices.dtype),
    ).shape
    offset_dims = tuple(dimension_numbers.offset_dims)
    collapsed = tuple(dimension_numbers.collapsed_slice_dims)
    index_map = tuple(dimension_numbers.start_index_map)
    if getattr(dimension_numbers, "operand_batching_dims", ()):
        raise NotImplementedError("bcoo_gather: operand batching dimensions are not supported")
    sizes = [int(d) for d in slice_sizes]
    rows = start_indices.reshape(-1, start_indices.shape[-1])

    def one(row):
        starts = [jnp.zeros((), row.dtype)] * operand.ndim
        for k, dim in enumerate(index_map):
            starts[dim] = row[k]
        piece = bcoo_dynamic_slice(operand, starts, sizes)
        return bcoo_squeeze(piece, dimensions=collapsed) if collapsed else piece

    out = morphax.vmap(one)(rows)
    batch_shape = tuple(start_indices.shape[:-1])
    out = bcoo_reshape(out, new_sizes=(*batch_shape, *out.shape[1:]))
    # lax.gather puts the slice dimensions at offset_dims and the index batch dimensions in the
    # remaining positions, in order.
    n_out = len(out_shape)
    batch_pos = [d for d in range(n_out) if d not in offset_dims]
    perm = [0] * n_out
    for k, d in enumerate(batch_pos):
        perm[d] = k
    for k, d in enumerate(offset_dims):
        perm[d] = len(batch_pos) + k
    if perm != list(range(n_out)):
        from morphax.experimental.sparse._bcoo_prims import bcoo_transpose_p, validate_permutation

        try:
            validate_permutation(perm, out.n_batch, out.n_sparse, out.ndim)
        except NotImplementedError:
            # The index dimensions (batch) go after slice dimensions: as JAX, make them sparse.
            out = out.update_layout(n_batch=0, on_inefficient=None)
            validate_permutation(perm, out.n_batch, out.n_sparse, out.ndim)
        data, idx = bcoo_transpose_p.bind(out.data, out.indices, permutation=tuple(perm), spinfo=out._info)
        out = type(out)((data, idx), shape=tuple(out.shape[p] for p in perm))
    return out


def bcoo_conv_general_dilated(lhs, rhs, **kwargs):
    """lax.conv_general_dilated with sparse operands, computed on the dense arrays (as a
    convolution spreads every nonzero over a window, the result is dense)."""
    lhs = lhs.todense() if isinstance(lhs, JAXSparse) else lhs
    rhs = rhs.todense() if isinstance(rhs, JAXSparse) else rhs
    return lax.conv_general_dilated(lhs, rhs, **kwargs)


def bcoo_getitem(mat, idx):
    """Basic indexing: integers, slices (any step), None and Ellipsis."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        fill = mat.ndim - (len(idx) - 1 - sum(i is None for i in idx))
        idx = idx[:k] + (slice(None),) * fill + idx[k + 1 :]
    starts, limits, strides, rev, squeeze, new_axes = [], [], [], [], [], []
    dim = 0
    out_pos = 0
    for i in idx:
        if i is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        size = mat.shape[dim]
        if isinstance(i, (int, np.integer)):
            j = int(i) + size if i < 0 else int(i)
            if not 0 <= j < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {size}")
            starts.append(j), limits.append(j + 1), strides.append(1), squeeze.append(dim)
        elif isinstance(i, slice):
            lo, hi, st = i.indices(size)
            if st > 0:
                starts.append(lo), limits.append(max(lo, hi)), strides.append(st)
            else:
                n = len(range(lo, hi, st))
                first = lo + (n - 1) * st if n else 0
                (
                    starts.append(first),
                    limits.append(first + (n - 1) * (-st) + 1 if n else 0),
                    strides.append(-st),
                )
                rev.append(dim)
            out_pos += 1
        else:
            return _advanced_getitem(mat, idx)
        dim += 1
    for d in range(dim, mat.ndim):
        starts.append(0), limits.append(mat.shape[d]), strides.append(1)
    out = bcoo_slice(mat, start_indices=starts, limit_indices=limits, strides=strides)
    if rev:
        out = bcoo_rev(out, rev)
    if squeeze:
        out = bcoo_squeeze(out, dimensions=squeeze)
    for pos in new_axes:
        shape = out.shape[:pos] + (1,) + out.shape[pos:]
        if pos <= out.n_batch:
            dims = tuple(d if d < pos else d + 1 for d in range(out.ndim))
            out = bcoo_broadcast_in_dim(out, shape=shape, broadcast_dimensions=dims)
        else:
            out = bcoo_reshape(out, new_sizes=shape)
    return out


def _advanced_getitem(mat, idx):
    """Indexing with arrays (or booleans): jnp's indexing of a dense stand-in traced to a jaxpr
    and evaluated with the sparse rules (gather, slicing, reshapes), as sparsify does."""
    return _SPARSIFY[0](lambda x: x[idx])(mat)


# `sparsify` (transform.py, which builds on this module) registers itself here when it is
# imported (the package imports it), for the indexing that needs it.
_SPARSIFY = [None]


def register_sparsify(fn):
    _SPARSIFY[0] = fn


# ------------------------------------------------------------------------------------ layout


def _padding_mask(mat, idx):
    """True for stored entries at in-bounds indices (not padding)."""
    nb, ns = mat.n_batch, mat.n_sparse
    if not ns:
        return jnp.ones(idx.shape[:-1], bool)
    return jnp.all(idx < jnp.array(mat.shape[nb : nb + ns], idx.dtype), axis=-1)


def relayout(mat, n_batch, n_dense):
    """`mat` with `n_batch` batch and `n_dense` dense dimensions, moving dimensions between the
    groups on the buffers (no dense copy), with JAX's nse: batch dimensions that become sparse
    multiply nse by their size (their elements' entries join), dense dimensions that become
    sparse multiply it by theirs (each entry splits per position); the other moves keep nse."""
    cls = type(mat)
    shape = mat.shape
    data, idx = broadcast_batch(mat.data, mat.indices, shape[: mat.n_batch])
    mat = cls((data, idx), shape=shape)
    # Dense dimensions leave first (they may become batch dimensions through the sparse group),
    # then the batch group changes, then sparse dimensions join the dense group.
    data, idx = mat.data, mat.indices
    nb, nd = mat.n_batch, mat.n_dense
    if n_dense < nd:
        # Leading dense dimensions become trailing sparse columns: each entry splits into one
        # entry per position of them.
        k = nd - n_dense
        moved = shape[mat.ndim - nd : mat.ndim - n_dense]
        size = prod(moved)
        nse = idx.shape[nb]
        coords = jnp.stack(
            jnp.meshgrid(*(jnp.arange(d, dtype=idx.dtype) for d in moved), indexing="ij"), axis=-1
        )
        coords = coords.reshape(size, k)
        valid = _padding_mask(mat, idx)
        old = jnp.broadcast_to(idx[..., :, None, :], (*idx.shape[:-1], size, idx.shape[-1]))
        new = jnp.broadcast_to(coords, (*idx.shape[:-1], size, k))
        joined = jnp.concatenate([old, new], axis=-1)
        bound = jnp.array(shape[nb : mat.ndim - n_dense], idx.dtype)
        joined = jnp.where(valid[..., None, None], joined, bound)
        idx = joined.reshape(*idx.shape[:nb], nse * size, joined.shape[-1])
        data = data.reshape(*data.shape[: nb + 1], size, *data.shape[data.ndim - n_dense :])
        data = data.reshape(*data.shape[:nb], nse * size, *data.shape[nb + 2 :])
        mat = cls((data, idx), shape=shape)

    data, idx = mat.data, mat.indices
    nb = mat.n_batch
    if n_batch < nb:
        # Batch dimensions n_batch..nb become leading sparse columns: their coordinates.
        moved = shape[n_batch:nb]
        grids = jnp.meshgrid(*(jnp.arange(d, dtype=idx.dtype) for d in moved), indexing="ij")
        lead = jnp.stack(grids, axis=-1) if moved else None
        lead = lead.reshape(*(1,) * n_batch, *moved, 1, len(moved))
        lead = jnp.broadcast_to(lead, (*idx.shape[:-1], len(moved)))
        valid = _padding_mask(mat, idx)
        bound = jnp.array(shape[n_batch : nb + mat.n_sparse], idx.dtype)
        idx = jnp.where(valid[..., None], jnp.concatenate([lead, idx], axis=-1), bound)
        nse = prod(moved) * idx.shape[nb]
        data = data.reshape(*shape[:n_batch], nse, *data.shape[nb + 1 :])
        idx = idx.reshape(*shape[:n_batch], nse, idx.shape[-1])
        mat = cls((data, idx), shape=shape)
    elif n_batch > nb:
        # Leading sparse columns become batch dimensions: every new batch element keeps the
        # entries at its coordinates (the others become padding).
        k = n_batch - nb
        moved = shape[nb:n_batch]
        coords = jnp.stack(
            jnp.meshgrid(*(jnp.arange(d, dtype=idx.dtype) for d in moved), indexing="ij"), axis=-1
        )  # (*moved, k)
        valid = _padding_mask(mat, idx)
        expand_i = idx.reshape(*shape[:nb], *(1,) * k, *idx.shape[nb:])
        here = jnp.all(
            expand_i[..., :k] == coords.reshape(*(1,) * nb, *moved, 1, k), axis=-1
        ) & valid.reshape(*shape[:nb], *(1,) * k, idx.shape[nb])
        rest_bound = jnp.array(shape[n_batch : nb + mat.n_sparse], idx.dtype)
        new_idx = jnp.where(here[..., None], expand_i[..., k:], rest_bound)
        d = data.reshape(*shape[:nb], *(1,) * k, *data.shape[nb:])
        new_data = jnp.where(here.reshape(here.shape + (1,) * (data.ndim - nb - 1)), d, 0)
        new_data = jnp.broadcast_to(new_data, (*shape[:n_batch], *data.shape[nb:]))
        mat = cls(
            (new_data, jnp.broadcast_to(new_idx, (*shape[:n_batch], *new_idx.shape[n_batch:]))), shape=shape
        )
    data, idx = mat.data, mat.indices
    nb, nd = mat.n_batch, mat.n_dense
    if n_dense > nd:
        # Trailing sparse columns become dense dimensions: each entry's data is placed at its
        # coordinates in a block of them.
        k = n_dense - nd
        ns = mat.n_sparse
        moved = shape[nb + ns - k : nb + ns]
        nse = idx.shape[nb]

        def one(d, i):
            block = jnp.zeros((nse, *moved, *d.shape[1:]), d.dtype)
            pos = tuple(i[:, ns - k + j] for j in range(k))
            return block.at[(jnp.arange(nse), *pos)].set(d, mode="drop")

        from morphax.experimental.sparse.util import nfold_vmap

        data = nfold_vmap(one, nb)(data, idx)
        keep = idx[..., : ns - k]
        valid = _padding_mask(mat, idx)
        idx = jnp.where(valid[..., None], keep, jnp.array(shape[nb : nb + ns - k], idx.dtype))
        mat = cls((data, idx), shape=shape)
    return mat
