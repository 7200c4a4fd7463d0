"""Format-generic functions: `empty`, `eye` and `todense` (with its primitive)."""

from __future__ import annotations

import operator

import morphax
import morphax.numpy as jnp
from morphax._src.core.ad_util import Zero, is_zero
from morphax._src.extend.primitives import Primitive
from morphax._src.tree_util import tree_flatten, tree_unflatten
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse._coo_csr import COO, CSC, CSR
from morphax.experimental.sparse.bcoo import BCOO
from morphax.experimental.sparse.bcsr import BCSR

_FORMATS = {"bcoo": BCOO, "bcsr": BCSR, "coo": COO, "csr": CSR, "csc": CSC}


def _format(sparse_format):
    try:
        return _FORMATS[sparse_format]
    except KeyError:
        raise ValueError(f"sparse_format={sparse_format!r}; expected one of {sorted(_FORMATS)}") from None


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """An all-zero sparse array of `shape` (nse 0)."""
    return _format(sparse_format)._empty(
        tuple(shape), dtype=dtype or jnp.float32, index_dtype=index_dtype, **kwds
    )


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """The sparse N x M matrix with ones on diagonal k."""
    M = N if M is None else M
    N, M, k = operator.index(N), operator.index(M), operator.index(k)
    return _format(sparse_format)._eye(N, M, k, dtype=dtype or jnp.float32, index_dtype=index_dtype, **kwds)


# todense_p: the densification of any sparse format, as one primitive over the format's buffers
# (what sparsify records when a sparse value meets an operation without a sparse rule).
todense_p = Primitive("todense")
todense_p.multiple_results = False


def _todense_impl(*bufs, tree):
    return tree_unflatten(tree, bufs).todense()


todense_p.def_impl(_todense_impl)
todense_p.def_abstract_eval(
    lambda *bufs, tree: morphax.ShapeDtypeStruct(
        tree_unflatten(tree, [jnp.zeros(b.shape, b.dtype) for b in bufs]).shape, bufs[0].dtype
    )
)


def _todense_jvp(primals, tangents, *, tree):
    out = todense_p.bind(*primals, tree=tree)
    if is_zero(tangents[0]):
        return out, Zero(morphax.core.ShapedArray(out.shape, out.dtype))
    # Densification is linear in the data buffer (the first), the indices held fixed.
    return out, todense_p.bind(tangents[0], *primals[1:], tree=tree)


def _todense_transpose(ct, *bufs, tree):
    from morphax._src.core.ad_util import is_undefined_primal

    if not is_undefined_primal(bufs[0]):
        raise ValueError("todense_p: only the data buffer is linear")
    fake = tree_unflatten(tree, [jnp.zeros(bufs[0].aval.shape, bufs[0].aval.dtype), *bufs[1:]])
    f = lambda d: tree_unflatten(tree, [d, *bufs[1:]]).todense()  # noqa: E731
    (ct_data,) = morphax.linear_transpose(f, fake.data)(ct)
    return [ct_data] + [None] * (len(bufs) - 1)


def _todense_batch(vals, dims, *, axis_data, tree):
    out = morphax.vmap(lambda *b: tree_unflatten(tree, b).todense(), in_axes=tuple(dims))(*vals)
    return out, 0


todense_p.jvp = _todense_jvp
todense_p.transpose = _todense_transpose
todense_p.batch = _todense_batch


def todense(arr):
    """The dense array of a sparse array (any format); other values unchanged."""
    if isinstance(arr, JAXSparse):
        bufs, tree = tree_flatten(arr)
        return todense_p.bind(*bufs, tree=tree)
    return arr
