"""What the linear-algebra primitives share: operand checks, the per-matrix reference loop, the
unary batching rule, well-conditioned random test matrices, and matrix operations on the
trailing two axes written with lax primitives (transposes, masks, triangles, products, row
permutations, triangular and LU solves), which the derivative rules use.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, tangent_aval
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.values import make_array
from morphax._src.prims import slicing
from morphax._src.prims.arithmetic import add, mul, sub
from morphax._src.prims.compare import eq, ge, le
from morphax._src.prims.complex_parts import conj
from morphax._src.prims.conversion import broadcasted_iota, convert_element_type, full
from morphax._src.prims.dot import Precision, dot_general
from morphax._src.prims.gather_scatter_add import gather
from morphax._src.prims.gather_scatter_dims import GatherDimensionNumbers, GatherScatterMode
from morphax._src.prims.reductions import reduce_sum
from morphax._src.prims.selection import select_n
from morphax._src.prims.shape import broadcast_in_dim, expand_dims, transpose
from morphax._src.prims.sorting import sort_key_val

__all__ = ["symmetrize"]


_LAPACK_DTYPES = ("float32", "float64", "complex64", "complex128")


def _check_operand(name, aval, argname="operand", *, square=False):
    if not _dtypes.is_inexact(aval.dtype):
        raise TypeError(
            f"{name} does not accept dtype {aval.dtype.name} for {argname}. Accepted dtypes are "
            "floating or complexfloating; jnp.linalg functions promote integers for you."
        )
    if aval.dtype.name not in _LAPACK_DTYPES:
        # JAX fails the same way (at lowering): LAPACK has no half-precision kernels.
        raise NotImplementedError(
            f"{name}: unsupported dtype {aval.dtype.name} for {argname}; LAPACK kernels exist for "
            "float32, float64, complex64 and complex128. Cast with lax.convert_element_type first."
        )
    if aval.ndim < 2:
        raise TypeError(f"Input {argname} to {name} must have rank at least 2, but got shape={aval.shape}")
    if square and aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"The input to {name} must be a square matrix. Got shape {aval.shape}.")


def _per_matrix(fn, x):
    """Run `fn` on each matrix of the batch `x` (leading dims) and stack its results; a
    matrix whose factorization fails gives NaNs (JAX's convention) instead of raising."""
    batch = x.shape[:-2]
    flat = x.reshape((-1,) + x.shape[-2:])
    outs = None
    failed = []
    for i, m in enumerate(flat):
        try:
            res = fn(m)
        except (np.linalg.LinAlgError, ValueError):
            res = None
            failed.append(i)
        if res is not None and outs is None:
            outs = [np.empty((len(flat),) + np.shape(r), np.asarray(r).dtype) for r in res]
        if res is not None:
            for k, r in enumerate(res):
                # A later matrix may give a wider dtype (complex eigenvectors after real ones).
                wider = np.result_type(outs[k].dtype, np.asarray(r).dtype)
                if wider != outs[k].dtype:
                    outs[k] = outs[k].astype(wider)
                outs[k][i] = r
    if outs is None:
        # Every matrix failed: the identity (which always factors) gives the result shapes.
        res = fn(np.eye(*x.shape[-2:], dtype=x.dtype))
        outs = [np.empty((len(flat),) + np.shape(r), np.asarray(r).dtype) for r in res]
    for i in failed:
        for o in outs:
            o[i] = np.nan if o.dtype.kind in "fc" else 0
    return [o.reshape(batch + o.shape[1:]) for o in outs]


def _real_dtype(dt):
    return np.dtype(_dtypes.real_dtype(dt))


def _unary_batcher(prim):
    """Every linalg primitive batches over leading dims: the vmapped axis goes in front."""

    def rule(vals, dims, *, axis_data, **params):
        (x,), (d,) = vals, dims
        out = prim.bind(moveaxis(x, d, 0), **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0

    prim.batch = rule
    return rule


def _randn(rng, shape, dt):
    dt = np.dtype(dt)
    if _dtypes.is_complex(dt):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


_F32_TOL = {"float32": 1e-4, "complex64": 1e-4}


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _is_complex(x):
    return _dtypes.is_complex(_dtype(x))


def _scalar(value, dtype):
    return make_array(np.asarray(value, dtype=dtype))


def _T(x):
    nd = len(_shape(x))
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    xt = _T(x)
    return conj(xt) if _is_complex(x) else xt


def _mm(a, b):
    """Batched matmul of (..., m, k) and (..., k, n) with equal batch dims."""
    nd = len(_shape(a))
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)), precision=Precision.HIGHEST)


def _iotas(shape):
    nd = len(shape)
    return broadcasted_iota(np.int32, shape, nd - 2), broadcasted_iota(np.int32, shape, nd - 1)


def _band_mask(shape, k, lower):
    """True on and below diagonal k (lower) or on and above it (upper)."""
    i, j = _iotas(shape)
    d = sub(j, i)
    k = _scalar(k, np.int32)
    return le(d, k) if lower else ge(d, k)


def _eye_mask(shape):
    i, j = _iotas(shape)
    return eq(i, j)


def _zeros(shape, dtype):
    return full(tuple(shape), 0, dtype)


def _tril(x, k=0):
    return select_n(_band_mask(_shape(x), k, True), _zeros(_shape(x), _dtype(x)), x)


def _triu(x, k=0):
    return select_n(_band_mask(_shape(x), k, False), _zeros(_shape(x), _dtype(x)), x)


def _eye(shape, dtype):
    return convert_element_type(_eye_mask(shape), dtype)


def _diag_part(x):
    """(..., m, n) -> (..., min(m, n)) diagonal."""
    s = _shape(x)
    m, n = s[-2:]
    d = reduce_sum(select_n(_eye_mask(s), _zeros(s, _dtype(x)), x), (len(s) - 1,))
    if m > n:
        d = slicing.slice(d, (0,) * (len(s) - 1), s[:-2] + (n,))
    return d


def _as_rows(v, n):
    """(..., k) -> (..., n, k): out[..., i, j] = v[..., j]."""
    s = _shape(v)
    r = len(s)
    return broadcast_in_dim(v, s[:-1] + (n, s[-1]), tuple(range(r - 1)) + (r,))


def _as_cols(v, n):
    """(..., k) -> (..., k, n): out[..., i, j] = v[..., i]."""
    s = _shape(v)
    r = len(s)
    return broadcast_in_dim(v, s[:-1] + (s[-1], n), tuple(range(r)))


def _slice_last2(x, rows=None, cols=None):
    s = _shape(x)
    r0, r1 = rows if rows is not None else (0, s[-2])
    c0, c1 = cols if cols is not None else (0, s[-1])
    nb = len(s) - 2
    return slicing.slice(x, (0,) * nb + (r0, c0), s[:-2] + (r1, c1))


def _to_dtype(x, dtype):
    return x if _dtype(x) == dtype else convert_element_type(x, dtype)


def symmetrize(x):
    """(x + x^H) / 2."""
    return mul(add(x, _H(x)), _scalar(0.5, _dtype(x)))


def _herm_from_triangle(t, lower):
    """The Hermitian matrix a routine reading one triangle (and the real part of the diagonal)
    sees in place of `t`."""
    s, dt = _shape(t), _dtype(t)
    half = mul(t, _scalar(0.5, dt))
    strict = _tril(t, -1) if lower else _triu(t, 1)
    part = select_n(_eye_mask(s), strict, half)
    return add(part, _H(part))


def _permute_rows(x, perm):
    """x[..., perm, :] for a batch of permutations (a gather with batching dims)."""
    s = _shape(x)
    if s[-2] == 0:
        # No rows to permute (a 0x0 system: JAX's inv/solve return an empty array); a gather of
        # one-row slices from an empty axis would be out of range, so there is nothing to do.
        return x
    nb = len(s) - 2
    idx = expand_dims(perm, (nb + 1,))
    dn = GatherDimensionNumbers(
        offset_dims=(nb + 1,),
        collapsed_slice_dims=(nb,),
        start_index_map=(nb,),
        operand_batching_dims=tuple(range(nb)),
        start_indices_batching_dims=tuple(range(nb)),
    )
    return gather(x, idx, dn, (1,) * (nb + 1) + (s[-1],), mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _inverse_permutation(perm):
    s = _shape(perm)
    iota = broadcasted_iota(np.int32, s, len(s) - 1)
    return sort_key_val(perm, iota, dimension=len(s) - 1)[1]


def _zero_tangents(outs):
    return [Zero(tangent_aval(get_aval(o))) for o in outs]
