"""Random sparse arrays (JAX's `jax.experimental.sparse.random`): `random_bcoo`."""

from __future__ import annotations

import operator

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax.experimental.sparse.bcoo import BCOO


def random_bcoo(
    key,
    shape,
    *,
    dtype=jnp.float_,
    indices_dtype=None,
    nse=0.2,
    n_batch=0,
    n_dense=0,
    unique_indices=True,
    sorted_indices=False,
    generator=None,
    **kwds,
):
    """A random BCOO: `nse` stored elements per batch element (a fraction of the sparse size when
    a float below 1), at random distinct (with unique_indices) positions, data from `generator`
    (random.uniform by default)."""
    generator = generator or morphax.random.uniform
    shape = tuple(int(d) for d in shape)
    n_sparse = len(shape) - n_batch - n_dense
    if n_sparse < 0:
        raise ValueError(f"random_bcoo: n_batch={n_batch} + n_dense={n_dense} exceeds ndim={len(shape)}")
    batch, sparse, dense = shape[:n_batch], shape[n_batch : n_batch + n_sparse], shape[n_batch + n_sparse :]
    sparse_size = int(np.prod(sparse))
    if isinstance(nse, float) and 0 < nse < 1:
        nse = int(np.ceil(nse * sparse_size))
    nse = operator.index(nse)
    if unique_indices and nse > sparse_size:
        raise ValueError(f"random_bcoo: nse={nse} exceeds the {sparse_size} positions with unique_indices")
    indices_dtype = indices_dtype or np.int32
    key_data, key_idx = morphax.random.split(key)
    data = generator(key_data, (*batch, nse, *dense), dtype, **kwds)
    n_batch_elems = int(np.prod(batch))
    keys = morphax.random.split(key_idx, max(1, n_batch_elems))

    def positions(k):
        flat = morphax.random.choice(k, sparse_size, (nse,), replace=not unique_indices)
        if sorted_indices:
            flat = jnp.sort(flat)
        cols = jnp.unravel_index(flat, sparse) if sparse else ()
        return (
            jnp.stack([c.astype(indices_dtype) for c in cols], axis=-1)
            if sparse
            else jnp.zeros((nse, 0), indices_dtype)
        )

    idx = (
        morphax.vmap(positions)(keys[:n_batch_elems]).reshape(*batch, nse, n_sparse)
        if n_batch
        else positions(keys[0])
    )
    return BCOO((data, idx), shape=shape, indices_sorted=sorted_indices, unique_indices=unique_indices)
