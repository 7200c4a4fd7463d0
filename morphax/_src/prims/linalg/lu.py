"""`lu`: partial-pivoting LU (getrf) with packed L\\U, int32 pivots and the permutation, its
derivative (de Hoog, Anderssen & Lukas), and `lu_pivots_to_permutation`."""

from __future__ import annotations

import numpy as np

from morphax._src.core.ad_util import is_zero
from morphax._src.core.avals import ShapedArray
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._ad import defjvp_zero
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add
from morphax._src.prims.bitwise import bitwise_and
from morphax._src.prims.compare import eq, ge
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _check_operand,
    _dtype,
    _eye,
    _inverse_permutation,
    _iotas,
    _mm,
    _per_matrix,
    _permute_rows,
    _randn,
    _scalar,
    _shape,
    _slice_last2,
    _tril,
    _triu,
    _unary_batcher,
    _zero_tangents,
)
from morphax._src.prims.linalg.triangular_solve import _trisolve
from morphax._src.prims.slicing import pad

__all__ = ["lu_solve", "solve", "lu_p", "lu_pivots_to_permutation_p", "lu", "lu_pivots_to_permutation"]


lu_p = Primitive("lu", multiple_results=True)
lu_p.kind = Kind.OPAQUE


def _lu_abstract_eval(x):
    _check_operand("lu", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    i32 = np.dtype(np.int32)
    return [
        ShapedArray(x.shape, x.dtype),
        ShapedArray(batch + (min(m, n),), i32),
        ShapedArray(batch + (m,), i32),
    ]


def _pivots_to_permutation(piv, m):
    perm = np.arange(m, dtype=np.int32)
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_impl(x):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if x.size == 0:
        piv = np.broadcast_to(np.arange(k, dtype=np.int32), batch + (k,)).copy()
        perm = np.broadcast_to(np.arange(m, dtype=np.int32), batch + (m,)).copy()
        return [x.copy(), piv, perm]
    import scipy.linalg  # here, not at the top: `import morphax` does not load SciPy

    getrf = scipy.linalg.get_lapack_funcs("getrf", (x,))

    def one(a):
        lu, piv, _info = getrf(a)  # info > 0 (exactly singular U) still factors, as in XLA
        piv = piv.astype(np.int32)[:k]
        return lu, piv, _pivots_to_permutation(piv, m)

    lu, piv, perm = _per_matrix(one, x)
    return [lu.astype(x.dtype), piv.astype(np.int32), perm.astype(np.int32)]


def _lu_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for shape in ((3, 3), (2, 4, 4), (4, 3), (3, 5), (1, 1), (2, 0, 2)):
            out.append(Case((_randn(rng, shape, dt),), {}, f"{dt}{list(shape)}"))
    return out


lu_p.abstract_eval = _lu_abstract_eval


lu_p.impl = _lu_impl


lu_p.test_spec = TestSpec(cases=_lu_cases, tol=_F32_TOL)


_unary_batcher(lu_p)


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")
lu_pivots_to_permutation_p.kind = Kind.OPAQUE


def _pivots_abstract_eval(pivots, *, permutation_size):
    if pivots.dtype != np.int32:
        raise TypeError(f"lu_pivots_to_permutation: pivots must be int32, got {pivots.dtype.name}.")
    if pivots.ndim < 1:
        raise ValueError(f"lu_pivots_to_permutation: pivots must have rank >= 1, got shape {pivots.shape}.")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(
            f"Output permutation size {permutation_size} has to exceed the trailing dimension of the "
            f"pivots. Got pivots shape {pivots.shape}."
        )
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.dtype(np.int32))


def _pivots_impl(pivots, *, permutation_size):
    pivots = np.asarray(pivots)
    batch = pivots.shape[:-1]
    flat = pivots.reshape((int(np.prod(batch, dtype=np.int64)), pivots.shape[-1]))
    out = np.zeros((flat.shape[0], permutation_size), np.int32)
    for i, p in enumerate(flat):
        out[i] = _pivots_to_permutation(p, permutation_size)
    return out.reshape(batch + (permutation_size,))


def _pivots_cases(rng):
    out = []
    for shape, size in (((3,), 3), ((2, 4), 5), ((0,), 2)):
        k = shape[-1]
        piv = np.stack([rng.integers(np.arange(k), size, size=k) for _ in range(int(np.prod(shape[:-1])))])
        out.append(
            Case((piv.reshape(shape).astype(np.int32),), {"permutation_size": size}, f"{list(shape)}-{size}")
        )
    return out


def _pivots_batch(vals, dims, *, axis_data, **params):
    (x,), (d,) = vals, dims
    return lu_pivots_to_permutation_p.bind(moveaxis(x, d, 0), **params), 0


lu_pivots_to_permutation_p.abstract_eval = _pivots_abstract_eval


lu_pivots_to_permutation_p.impl = _pivots_impl


lu_pivots_to_permutation_p.batch = _pivots_batch


lu_pivots_to_permutation_p.test_spec = TestSpec(cases=_pivots_cases, differentiable=False)


def lu(x):
    """LU with partial pivoting: (lu, pivots, permutation) with x[permutation] = L U."""
    return tuple(lu_p.bind(x))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that the row swaps `pivots` apply to range(permutation_size)."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def _lu_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    outs = lu_p.bind(a)
    lu, _, perm = outs
    zeros = _zero_tangents(outs)
    if is_zero(t):
        return outs, zeros
    s = _shape(a)
    nb = len(s) - 2
    m, n = s[-2:]
    k = min(m, n)
    dt = _dtype(a)
    zero = _scalar(0, dt)
    l_part = _tril(_slice_last2(lu, cols=(0, k)), -1)
    if m > k:
        l_part = pad(l_part, zero, [(0, 0, 0)] * (nb + 1) + [(0, m - k, 0)])
    l_full = add(l_part, _eye(s[:-2] + (m, m), dt))
    u_part = _triu(_slice_last2(lu, rows=(0, k)))
    if n > k:
        u_part = pad(u_part, zero, [(0, 0, 0)] * nb + [(0, n - k, 0), (0, 0, 0)])
        # The trailing block gets a unit diagonal so the solve below stays defined.
        i, j = _iotas(s[:-2] + (n, n))
        trail = convert_element_type(bitwise_and(eq(i, j), ge(i, _scalar(k, np.int32))), dt)
        u_part = add(u_part, trail)
    la = _trisolve(l_full, _permute_rows(t, perm), left_side=True, lower=True, unit_diagonal=True)
    lau = _trisolve(u_part, la, left_side=False, lower=False)
    l_dot = _mm(l_full, _tril(lau, -1))
    u_dot = _mm(_triu(lau), u_part)
    return outs, [add(l_dot, u_dot), zeros[1], zeros[2]]


lu_p.jvp = _lu_jvp


defjvp_zero(lu_pivots_to_permutation_p)


def lu_solve(lu, perm, b, trans=0):
    """Solve a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from a's LU factors; b is (..., m, k)."""
    if trans == 0:
        x = _permute_rows(b, perm)
        x = _trisolve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        return _trisolve(lu, x, left_side=True, lower=False)
    conj = trans == 2
    x = _trisolve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    x = _trisolve(lu, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=conj)
    return _permute_rows(x, _inverse_permutation(perm))


def solve(a, b):
    """a^{-1} b for square a (..., m, m) and b (..., m, k) with the same batch dims."""
    lu, _, perm = lu_p.bind(a)
    return lu_solve(lu, perm, b)
