"""Linear-algebra primitives (`lax.linalg`): cholesky, triangular_solve, lu, lu_pivots_to_permutation,
qr, eigh, svd and eig, each batched over leading dimensions with a NumPy/SciPy LAPACK reference.

Declarations, shape/dtype checks, references, batching rules and test specs live here; the
derivative rules are in `linalg_rules`, installed by the import at the end of this module.
"""

from __future__ import annotations

import enum

import numpy as np
import scipy.linalg

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._batching import _lax, bdim_to_front, moveaxis
from morphax._src.prims._spec import Case, TestSpec

__all__ = [
    "cholesky_p",
    "eig_p",
    "eigh_p",
    "lu_p",
    "lu_pivots_to_permutation_p",
    "qr_p",
    "svd_p",
    "triangular_solve_p",
]


class EigImplementation(enum.Enum):
    """Which eig kernel to use; the reference always runs LAPACK's geev."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Which eigh kernel to use; the reference always runs LAPACK's syevd/heevd."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """Which SVD kernel to use; the reference always runs LAPACK's gesdd."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


# ------------------------------------------------------------------------------------------------
# Shared checks and reference helpers.

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
            for o, r in zip(outs, res):
                o[i] = r
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


# ------------------------------------------------------------------------------------------------
# Test-case helpers: well-conditioned random matrices.


def _randn(rng, shape, dt):
    dt = np.dtype(dt)
    if _dtypes.is_complex(dt):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _hermitian_pd(rng, shape, dt):
    a = _randn(rng, shape, dt).astype(np.complex128 if _dtypes.is_complex(np.dtype(dt)) else np.float64)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


_F32_TOL = {"float32": 1e-4, "complex64": 1e-4}


# ------------------------------------------------------------------------------------------------
# cholesky: the lower Cholesky factor, reading only the lower triangle (LAPACK potrf).

cholesky_p = Primitive("cholesky")
cholesky_p.kind = Kind.OPAQUE


def _cholesky_abstract_eval(x):
    _check_operand("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)


def _cholesky_impl(x):
    x = np.asarray(x)
    try:
        out = np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        (out,) = _per_matrix(lambda m: (np.linalg.cholesky(m),), x)
    return np.asarray(out).astype(x.dtype)


def _cholesky_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for shape in ((3, 3), (2, 4, 4), (1, 1), (2, 3, 2, 2), (0, 0)):
            out.append(Case((_hermitian_pd(rng, shape, dt),), {}, f"{dt}{list(shape)}"))
    # The upper triangle is never read: garbage there leaves the result alone.
    a = _hermitian_pd(rng, (3, 3), "float32")
    a[0, 2] = 100.0
    out.append(Case((a,), {}, "float32-upper-ignored"))
    return out


cholesky_p.abstract_eval = _cholesky_abstract_eval
cholesky_p.impl = _cholesky_impl
cholesky_p.test_spec = TestSpec(cases=_cholesky_cases, tol=_F32_TOL)
_unary_batcher(cholesky_p)


# ------------------------------------------------------------------------------------------------
# triangular_solve: op(a) x = b (left_side) or x op(a) = b, reading one triangle of a.

triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.kind = Kind.OPAQUE


def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_operand("triangular_solve", a, "a", square=True)
    _check_operand("triangular_solve", b, "b")
    if a.dtype != b.dtype:
        raise TypeError(
            f"triangular_solve requires a and b to have the same dtype, got {a.dtype.name} and {b.dtype.name}."
        )
    if a.ndim != b.ndim:
        raise TypeError(
            "All inputs to triangular_solve must have the same number of batch dimensions, but got "
            f"a of shape {a.shape} and b of shape {b.shape}."
        )
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"triangular_solve: batch dimensions of a {a.shape} and b {b.shape} must be equal.")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise ValueError(
            f"Incompatible shapes for arguments to triangular_solve: {a.shape} and {b.shape} "
            f"(left_side={left_side})."
        )
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    out = np.empty(b.shape, b.dtype)
    if out.size == 0:
        return out
    trsm = scipy.linalg.get_blas_funcs("trsm", (a, b))
    complex_ = _dtypes.is_complex(a.dtype)
    # BLAS trsm solves op(a) with op in {a, a^T, a^H}; conj(a) alone is conj(trsm(a, conj(b))).
    trans = (2 if conjugate_a and complex_ else 1) if transpose_a else 0
    conj_only = conjugate_a and complex_ and not transpose_a
    flat_a = a.reshape((-1,) + a.shape[-2:])
    flat_b = b.reshape((-1,) + b.shape[-2:])
    flat_o = out.reshape((-1,) + b.shape[-2:])
    with np.errstate(all="ignore"):
        for i in range(flat_b.shape[0]):
            rhs = np.conj(flat_b[i]) if conj_only else flat_b[i]
            x = trsm(
                1.0,
                flat_a[i],
                rhs,
                side=0 if left_side else 1,
                lower=int(lower),
                trans_a=trans,
                diag=int(unit_diagonal),
            )
            flat_o[i] = np.conj(x) if conj_only else x
    return out


def _triangular_solve_batch(vals, dims, *, axis_data, left_side, **params):
    a, b = vals
    da, db = dims
    L = _lax()
    if da is None:
        # a shared by every example: fold the batch into b's free axis and solve once.
        bs = get_aval(b).shape
        nd = len(bs)
        if left_side:
            b = moveaxis(b, db, nd - 1)
            s = get_aval(b).shape
            out = triangular_solve_p.bind(a, _fold(b, left_side=True), left_side=True, **params)
            return L.reshape(out, s), nd - 1
        b = moveaxis(b, db, nd - 3)
        s = get_aval(b).shape
        out = triangular_solve_p.bind(a, _fold(b, left_side=False), left_side=False, **params)
        return L.reshape(out, s), nd - 3
    a = moveaxis(a, da, 0)
    b = bdim_to_front(b, db, axis_data.size)
    return triangular_solve_p.bind(a, b, left_side=left_side, **params), 0


def _fold(b, *, left_side):
    """(..., m, n, B) -> (..., m, n*B) for a left solve; (..., B, n, m) -> (..., B*n, m) for a right one."""
    s = get_aval(b).shape
    if left_side:
        return _lax().reshape(b, s[:-2] + (s[-2] * s[-1],))
    return _lax().reshape(b, s[:-3] + (s[-3] * s[-2], s[-1]))


def _triangular_solve_cases(rng):
    out = []
    configs = (
        ((3, 3), (3, 2), True),
        ((4, 4), (2, 4), False),
        ((2, 3, 3), (2, 3, 4), True),
        ((2, 3, 3), (2, 1, 3), False),
        ((1, 1), (1, 3), True),
        ((3, 3), (3, 0), True),
    )
    flags = (
        dict(lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False),
        dict(lower=False, transpose_a=True, conjugate_a=False, unit_diagonal=False),
        dict(lower=True, transpose_a=True, conjugate_a=True, unit_diagonal=True),
        dict(lower=False, transpose_a=False, conjugate_a=True, unit_diagonal=False),
    )
    for dt in ("float32", "complex64"):
        for k, (sa, sb, left) in enumerate(configs):
            # A dominant diagonal keeps the solve well conditioned; the unread triangle is random too.
            a = _randn(rng, sa, dt) + (3 * np.eye(sa[-1])).astype(dt)
            b = _randn(rng, sb, dt)
            f = flags[k % len(flags)]
            params = dict(left_side=left, **f)
            tag = "".join(n[0] for n, v in params.items() if v)
            out.append(Case((a, b), params, f"{dt}{list(sa)}{list(sb)}-{tag}"))
    return out


triangular_solve_p.abstract_eval = _triangular_solve_abstract_eval
triangular_solve_p.impl = _triangular_solve_impl
triangular_solve_p.batch = _triangular_solve_batch
triangular_solve_p.test_spec = TestSpec(cases=_triangular_solve_cases, tol=_F32_TOL)


# ------------------------------------------------------------------------------------------------
# lu: partial-pivoting LU (getrf). Results: packed L\U, int32 pivots (row swaps), int32 permutation.

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


# ------------------------------------------------------------------------------------------------
# lu_pivots_to_permutation: apply the row swaps to the identity permutation.

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


# ------------------------------------------------------------------------------------------------
# qr: Householder QR (geqrf/orgqr); with pivoting, column-pivoted QR (geqp3) and the pivots.

qr_p = Primitive("qr", multiple_results=True)
qr_p.kind = Kind.OPAQUE


def _qr_abstract_eval(x, *, pivoting, full_matrices, use_magma):
    _check_operand("qr", x)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = x.shape[:-2]
    out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), np.dtype(np.int32)))
    return out


def _qr_impl(x, *, pivoting, full_matrices, use_magma):
    x = np.asarray(x)
    if not pivoting:
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
        return [q.astype(x.dtype), r.astype(x.dtype)]
    mode = "full" if full_matrices else "economic"
    m, n = x.shape[-2:]
    if x.size == 0:
        k = m if full_matrices else min(m, n)
        eye = np.broadcast_to(np.eye(m, k, dtype=x.dtype), x.shape[:-2] + (m, k)).copy()
        p = np.broadcast_to(np.arange(n, dtype=np.int32), x.shape[:-2] + (n,)).copy()
        return [eye, np.zeros(x.shape[:-2] + (k, n), x.dtype), p]
    q, r, p = _per_matrix(lambda a: scipy.linalg.qr(a, mode=mode, pivoting=True), x)
    return [q.astype(x.dtype), r.astype(x.dtype), p.astype(np.int32)]


def _qr_cases(rng):
    out = []
    base = {"pivoting": False, "use_magma": None}
    for dt in ("float32", "complex64"):
        for shape, full in (
            ((3, 3), False),
            ((4, 3), False),
            ((2, 3, 5), True),
            ((2, 5, 3), True),
            ((3, 5), False),
            ((1, 1), True),
            ((0, 2), False),
        ):
            out.append(
                Case(
                    (_randn(rng, shape, dt),), dict(base, full_matrices=full), f"{dt}{list(shape)}-full{full}"
                )
            )
    out.append(
        Case(
            (_randn(rng, (4, 3), "float32"),),
            dict(base, full_matrices=False, pivoting=True),
            "float32-pivoting",
        )
    )
    return out


qr_p.abstract_eval = _qr_abstract_eval
qr_p.impl = _qr_impl
qr_p.test_spec = TestSpec(cases=_qr_cases, tol=_F32_TOL)
_unary_batcher(qr_p)


# ------------------------------------------------------------------------------------------------
# eigh: Hermitian eigendecomposition reading one triangle (syevd/heevd). Results (v, w): the
# eigenvectors (columns) and the real eigenvalues in ascending order.

eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.kind = Kind.OPAQUE


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"Argument to symmetric eigendecomposition must have shape [..., n, n], got shape {x.shape}"
        )
    _check_operand("eigh", x, square=True)
    n = x.shape[-1]
    d = n
    if subset_by_index is not None:
        lo, hi = subset_by_index
        if not 0 <= lo <= hi <= n:
            raise ValueError(
                f"eigh: subset_by_index must satisfy 0 <= start <= end <= {n}, got {subset_by_index}."
            )
        d = hi - lo
    batch = x.shape[:-2]
    return [ShapedArray(batch + (n, d), x.dtype), ShapedArray(batch + (d,), _real_dtype(x.dtype))]


def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    x = np.asarray(x)
    uplo = "L" if lower else "U"
    try:
        w, v = np.linalg.eigh(x, UPLO=uplo)
    except np.linalg.LinAlgError:
        w, v = _per_matrix(lambda m: np.linalg.eigh(m, UPLO=uplo), x)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., :, lo:hi]
    return [np.asarray(v).astype(x.dtype), np.asarray(w).astype(_real_dtype(x.dtype))]


def _eigh_cases(rng):
    out = []
    base = {"sort_eigenvalues": True, "subset_by_index": None, "algorithm": None}
    for dt in ("float32", "complex64"):
        for shape, lower in (
            ((3, 3), True),
            ((2, 4, 4), False),
            ((1, 1), True),
            ((2, 2, 3, 3), True),
            ((0, 0), True),
        ):
            a = _randn(rng, shape, dt)
            a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
            out.append(Case((a.astype(dt),), dict(base, lower=lower), f"{dt}{list(shape)}-lower{lower}"))
    a = _randn(rng, (4, 4), "float32")
    out.append(Case((a + a.T,), dict(base, lower=True, subset_by_index=(1, 3)), "float32-subset"))
    return out


eigh_p.abstract_eval = _eigh_abstract_eval
eigh_p.impl = _eigh_impl
eigh_p.test_spec = TestSpec(cases=_eigh_cases, tol=_F32_TOL)
_unary_batcher(eigh_p)


# ------------------------------------------------------------------------------------------------
# svd: singular values (descending, real) and, with compute_uv, U and V^H. Results (s, u, vh).

svd_p = Primitive("svd", multiple_results=True)
svd_p.kind = Kind.OPAQUE


def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    _check_operand("svd", x)
    m, n = x.shape[-2:]
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, rank):
            raise ValueError("full_matrices and subset_by_index cannot both be set")
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    batch = x.shape[:-2]
    s = ShapedArray(batch + (rank,), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray(batch + (m, m if full_matrices else rank), x.dtype)
    vh = ShapedArray(batch + (n if full_matrices else rank, n), x.dtype)
    return [s, u, vh]


def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    x = np.asarray(x)
    rdt = _real_dtype(x.dtype)
    m, n = x.shape[-2:]
    if not compute_uv:
        if x.size == 0:
            s = np.zeros(x.shape[:-2] + (min(m, n),), rdt)
        else:
            try:
                s = np.linalg.svd(x, compute_uv=False)
            except np.linalg.LinAlgError:  # non-finite input: NaNs for that matrix
                (s,) = _per_matrix(lambda a: (np.linalg.svd(a, compute_uv=False),), x)
        if subset_by_index is not None:
            s = s[..., subset_by_index[0] : subset_by_index[1]]
        return [s.astype(rdt)]
    try:
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        u, s, vh = _per_matrix(lambda a: np.linalg.svd(a, full_matrices=full_matrices), x)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        s, u, vh = s[..., lo:hi], u[..., :, lo:hi], vh[..., lo:hi, :]
    return [s.astype(rdt), u.astype(x.dtype), vh.astype(x.dtype)]


def _svd_cases(rng):
    out = []
    base = {"subset_by_index": None, "algorithm": None}
    configs = (
        ((3, 3), True, True),
        ((4, 3), False, True),
        ((2, 3, 5), False, True),
        ((2, 4, 3), True, False),
        ((2, 2, 4, 4), True, True),
        ((3, 5), True, True),
        ((1, 1), True, True),
        ((0, 2), False, True),
    )
    for dt in ("float32", "complex64"):
        for shape, full, uv in configs:
            params = dict(base, full_matrices=full, compute_uv=uv)
            out.append(Case((_randn(rng, shape, dt),), params, f"{dt}{list(shape)}-full{full}-uv{uv}"))
    params = dict(base, full_matrices=False, compute_uv=True, subset_by_index=(0, 2))
    out.append(Case((_randn(rng, (4, 3), "float32"),), params, "float32-subset"))
    return out


svd_p.abstract_eval = _svd_abstract_eval
svd_p.impl = _svd_impl
svd_p.test_spec = TestSpec(cases=_svd_cases, tol=_F32_TOL)
_unary_batcher(svd_p)


# ------------------------------------------------------------------------------------------------
# eig: general eigendecomposition (geev). Results: complex eigenvalues, then the left and/or right
# eigenvectors (unit 2-norm, largest component real) when asked for.

eig_p = Primitive("eig", multiple_results=True)
eig_p.kind = Kind.OPAQUE


def _eig_abstract_eval(
    x, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs, implementation
):
    _check_operand("eig", x, square=True)
    cdt = np.dtype(_dtypes.to_complex_dtype(x.dtype))
    out = [ShapedArray(x.shape[:-1], cdt)]
    out += [ShapedArray(x.shape, cdt)] * (int(compute_left_eigenvectors) + int(compute_right_eigenvectors))
    return out


def _eig_impl(
    x, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs, implementation
):
    x = np.asarray(x)
    cdt = np.dtype(_dtypes.to_complex_dtype(x.dtype))
    nv = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    if x.size == 0:
        return [np.zeros(x.shape[:-1], cdt)] + [np.zeros(x.shape, cdt)] * nv

    def one(a):
        if not np.all(np.isfinite(a)):
            raise np.linalg.LinAlgError("non-finite input")
        w, vl, vr = scipy.linalg.eig(a, left=True, right=True, check_finite=False)
        res = [w]
        if compute_left_eigenvectors:
            res.append(vl)
        if compute_right_eigenvectors:
            res.append(vr)
        return res

    with np.errstate(all="ignore"):
        outs = _per_matrix(one, x)
    return [o.astype(cdt) for o in outs]


def _eig_cases(rng):
    out = []
    flags = (
        (False, False, False),
        (False, True, True),
        (True, True, True),
        (True, False, True),
    )
    for dt in ("float32", "complex64"):
        for k, shape in enumerate(((3, 3), (2, 4, 4), (2, 2, 3, 3), (1, 1), (2, 2))):
            left, right, derivs = flags[k % len(flags)]
            params = {
                "compute_left_eigenvectors": left,
                "compute_right_eigenvectors": right,
                "enable_eigvec_derivs": derivs,
                "implementation": None,
            }
            out.append(Case((_randn(rng, shape, dt),), params, f"{dt}{list(shape)}-l{left:d}r{right:d}"))
    return out


eig_p.abstract_eval = _eig_abstract_eval
eig_p.impl = _eig_impl
eig_p.test_spec = TestSpec(cases=_eig_cases, tol=_F32_TOL, grad_order=2)
_unary_batcher(eig_p)


# ------------------------------------------------------------------------------------------------
# Wrappers (JAX's `lax.linalg` functions).


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor L with x = L L^H; NaNs where x is not positive definite. Without
    `symmetrize_input` only the lower triangle of x is read."""
    if symmetrize_input:
        x = linalg_rules.symmetrize(x)
    return cholesky_p.bind(x)


def triangular_solve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    """Solve op(a) x = b (left_side) or x op(a) = b for triangular a; op transposes and/or conjugates.
    A `b` with one dimension fewer than `a` is a (batch of) vectors."""
    a_aval, b_aval = get_aval(a), get_aval(b)
    conjugate_a = bool(conjugate_a) and _dtypes.is_complex(a_aval.dtype)
    L = _lax()
    singleton = b_aval.ndim == a_aval.ndim - 1
    if singleton:
        b = L.expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
    out = triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=conjugate_a,
        unit_diagonal=bool(unit_diagonal),
    )
    if singleton:
        nd = len(get_aval(out).shape)
        out = L.squeeze(out, (nd - 1 if left_side else nd - 2,))
    return out


def lu(x):
    """LU with partial pivoting: (lu, pivots, permutation) with x[permutation] = L U."""
    return tuple(lu_p.bind(x))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that the row swaps `pivots` apply to range(permutation_size)."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition: (q, r), or (q, r, p) with column pivoting (x[..., p] = q r)."""
    out = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices), use_magma=use_magma)
    return tuple(out)


def eigh(
    x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True, subset_by_index=None, implementation=None
):
    """Hermitian eigendecomposition: (v, w) with eigenvalues w ascending and eigenvectors v[..., :, i]."""
    if symmetrize_input:
        x = linalg_rules.symmetrize(x)
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(
        x,
        lower=bool(lower),
        sort_eigenvalues=bool(sort_eigenvalues),
        subset_by_index=subset,
        algorithm=implementation,
    )
    return v, w


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition: (u, s, vh), or s alone without `compute_uv`."""
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    out = svd_p.bind(
        x,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        subset_by_index=subset,
        algorithm=algorithm,
    )
    if compute_uv:
        s, u, vh = out
        return u, s, vh
    return out[0]


def eig(
    x,
    *,
    compute_left_eigenvectors=True,
    compute_right_eigenvectors=True,
    enable_eigvec_derivs=False,
    implementation=None,
    use_magma=None,
):
    """General eigendecomposition: [w, vl?, vr?]. Eigenvector derivatives need enable_eigvec_derivs
    (valid for distinct eigenvalues under LAPACK's normalization)."""
    del use_magma
    out = eig_p.bind(
        x,
        compute_left_eigenvectors=bool(compute_left_eigenvectors),
        compute_right_eigenvectors=bool(compute_right_eigenvectors),
        enable_eigvec_derivs=bool(enable_eigvec_derivs),
        implementation=implementation,
    )
    return list(out)


# The derivative rules, installed on the primitives above.
from morphax._src.prims import linalg_rules  # noqa: E402,F401
