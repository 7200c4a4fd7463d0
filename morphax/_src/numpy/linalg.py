"""`morphax.numpy.linalg`: NumPy's linear algebra on the `lax.linalg` primitives, with JAX's
signatures, promotion (integers become float32) and batching over leading dimensions.

Derivatives come from the primitives' rules, except where JAX defines its own: det (cofactor
form, defined at rank n-1), slogdet (trace of a^{-1} a') and pinv (Golub & Pereyra).
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, manipulation, products, reductions, ufuncs, util
from morphax._src.numpy.indexing import take_along_axis
from morphax._src.numpy.linalg_array_api import (  # noqa: F401  (re-exported)
    _arr,
    _dtype,
    _inexact,
    _shape,
    cross,
    diagonal,
    matmul,
    matrix_norm,
    matrix_transpose,
    multi_dot,
    norm,
    outer,
    tensordot,
    trace,
    vecdot,
    vector_norm,
)
from morphax._src.prims import lax_api as L
from morphax._src.prims import linalg as _la
from morphax._src.prims.linalg import matrix_ops as _matrix_ops
from morphax._src.prims.linalg.lu import lu_solve as _lu_solve
from morphax._src.prims.linalg.qr import geqrf as _geqrf
from morphax._src.transforms.custom import custom_jvp

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
    "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


# ------------------------------------------------------------------------------------------------
# Helpers.


def _square(name, a):
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"Argument to {name}() must have shape [..., n, n], got {s}")


def _H(x):
    return (
        ufuncs.conj(manipulation.matrix_transpose(x))
        if _dtypes.is_complex(_dtype(x))
        else (manipulation.matrix_transpose(x))
    )


def _symmetrize(x):
    return ufuncs.multiply(ufuncs.add(x, _H(x)), util.convert_element_type(0.5, _dtype(x)))


def _mm(a, b):
    return products.matmul(a, b, precision=L.Precision.HIGHEST)


def _diag(x):
    """Main diagonal along the last two axes."""
    k = min(_shape(x)[-2:])
    idx = np.arange(k)
    return x[..., idx, idx]


def _broadcast_batch(*xs_and_cores):
    """Broadcast the leading (batch) dims of each (array, core rank) pair against each other."""
    batch = manipulation.broadcast_shapes(*[_shape(x)[: len(_shape(x)) - r] for x, r in xs_and_cores])
    return [
        manipulation.broadcast_to(x, tuple(batch) + _shape(x)[len(_shape(x)) - r :]) for x, r in xs_and_cores
    ]


def _eye_like(n, dtype, batch=()):
    eye = creation.eye(n, dtype=dtype)
    return manipulation.broadcast_to(eye, tuple(batch) + (n, n)) if batch else eye


# ------------------------------------------------------------------------------------------------
# Decompositions.


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of a Hermitian positive-definite (batch of) matrix: lower L with a = L L^H,
    or upper U = L^H. NaNs where a is not positive definite."""
    (a,) = _inexact("jnp.linalg.cholesky", a)
    _square("cholesky", a)
    factor = _la.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(factor) if upper else factor


def qr(a, mode: str = "reduced"):
    """QR decomposition: QRResult(Q, R) for modes 'reduced' and 'complete', R alone for 'r', and
    for 'raw' LAPACK's Householder form as NumPy returns it: (h, tau), h of shape (..., N, M)."""
    (a,) = _inexact("jnp.linalg.qr", a)
    if len(_shape(a)) < 2:
        raise ValueError(f"jnp.linalg.qr requires an array of rank >= 2, got shape {_shape(a)}")
    if mode == "raw":
        # As JAX (and NumPy): geqrf's packed matrix, transposed, and its scalar factors.
        h, taus = _geqrf(a)
        return QRResult(manipulation.matrix_transpose(h), taus)
    if mode in ("reduced", "r", "full"):
        full = False
    elif mode == "complete":
        full = True
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = _la.qr(a, pivoting=False, full_matrices=full)
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors of a Hermitian (batch of) matrix."""
    (a,) = _inexact("jnp.linalg.eigh", a)
    if UPLO is None or UPLO == "L":
        lower = True
    elif UPLO == "U":
        lower = False
    else:
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    _square("eigh", a)
    v, w = _la.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):  # noqa: N803
    """Eigenvalues (ascending) of a Hermitian (batch of) matrix."""
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of a general (batch of) square matrix, as complex arrays.
    Only the eigenvalues are differentiable."""
    (a,) = _inexact("jnp.linalg.eig", a)
    _square("eig", a)
    w, v = _la.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of a general (batch of) square matrix, as a complex array."""
    (a,) = _inexact("jnp.linalg.eigvals", a)
    _square("eigvals", a)
    return _la.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(
    a,
    full_matrices: bool = True,
    compute_uv: bool = True,
    hermitian: bool = False,
    subset_by_index: tuple[int, int] | None = None,
):
    """Singular value decomposition: SVDResult(U, S, Vh) with S descending, or S alone."""
    (a,) = _inexact("jnp.linalg.svd", a)
    if len(_shape(a)) < 2:
        raise ValueError(f"jnp.linalg.svd requires an array of rank >= 2, got shape {_shape(a)}")
    if hermitian:
        # |eigenvalues| sorted descending; the eigenvalue signs move into Vh.
        v, w = _la.eigh(a, subset_by_index=subset_by_index)
        s = ufuncs.abs(w)
        nd = len(_shape(s))
        if not compute_uv:
            return L.rev(L.sort(s, dimension=nd - 1), (nd - 1,))
        sign = ufuncs.sign(w)
        idx = L.broadcasted_iota(np.int32, _shape(s), nd - 1)
        s, idx, sign = L.sort((s, idx, sign), dimension=nd - 1, num_keys=1)
        s, idx, sign = (L.rev(t, (nd - 1,)) for t in (s, idx, sign))
        u = take_along_axis(v, manipulation.expand_dims(idx, -2), axis=-1)
        vh = _H(ufuncs.multiply(u, util.convert_element_type(manipulation.expand_dims(sign, -2), _dtype(u))))
        return SVDResult(u, s, vh)
    if compute_uv:
        u, s, vh = _la.svd(a, full_matrices=full_matrices, compute_uv=True, subset_by_index=subset_by_index)
        return SVDResult(u, s, vh)
    return _la.svd(a, full_matrices=full_matrices, compute_uv=False, subset_by_index=subset_by_index)


def svdvals(x, /):
    """Singular values, descending."""
    (x,) = _arr("jnp.linalg.svdvals", x)
    return svd(x, compute_uv=False, hermitian=False)


# ------------------------------------------------------------------------------------------------
# Solves and inverses: LU factors plus triangular solves, differentiated through their rules.


def _lu_solve_batched(a, b):
    """a^{-1} b for a (..., m, m), b (..., m, k) with equal batch dims."""
    lu, _, perm = _la.lu(a)
    return _lu_solve(lu, perm, b)


def solve(a, b):
    """Solve a x = b. `b` of shape (m,) is one vector for every matrix of `a`; otherwise b is
    (..., m, k) and its batch dims broadcast against a's."""
    a, b = _inexact("jnp.linalg.solve", a, b)
    sa, sb = _shape(a), _shape(b)
    if len(sa) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape={sa}")
    _square("solve", a)
    if len(sb) == 0:
        raise ValueError(f"right hand array must be at least one dimensional; got b.shape={sb}")
    if len(sb) > 1 and len(sa) == len(sb) + 1 and sa[-1] == sb[-1] and sa[-1] != sb[-2]:
        raise ValueError(
            f"Invalid shapes for solve: {sa}, {sb}. Prior to JAX v0.5.0, this would have been treated as a "
            "batched 1-dimensional solve. To recover this behavior, use solve(a, b[..., None]).squeeze(-1)."
        )
    m = sa[-1]
    if len(sb) == 1:
        if sb[0] != m:
            raise ValueError(f"solve: b of shape {sb} does not match a of shape {sa}")
        bm = manipulation.broadcast_to(manipulation.expand_dims(b, -1), sa[:-2] + (m, 1))
        return _lu_solve_batched(a, bm)[..., 0]
    if sb[-2] != m:
        raise ValueError(
            f"The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] or b=[m]; got a={sa} and b={sb}"
        )
    a, b = _broadcast_batch((a, 2), (b, 2))
    return _lu_solve_batched(a, b)


def inv(a):
    """Matrix inverse of a (batch of) square matrix (inf/nan where singular)."""
    (arr,) = _arr("jnp.linalg.inv", a)
    s = _shape(arr)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {s}.")
    (arr,) = util.promote_dtypes_inexact(arr)
    return solve(arr, _eye_like(s[-1], _dtype(arr), s[:-2]))


def matrix_power(a, n: int):
    """a raised to the integer power n by repeated squaring (inverse first for negative n)."""
    (arr,) = _arr("jnp.linalg.matrix_power", a)
    s = _shape(arr)
    if len(s) < 2:
        raise TypeError(f"{len(s)}-dimensional array given. Array must be at least two-dimensional")
    if s[-2] != s[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return manipulation.broadcast_to(creation.eye(s[-1], dtype=_dtype(arr)), s)
    if n < 0:
        arr = inv(arr)
        n = -n
    result = z = None
    while n > 0:
        z = arr if z is None else products.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else products.matmul(result, z)
    return result


def tensorinv(a, ind: int = 2):
    """Inverse of `a` seen as a matrix from its first `ind` axes to the rest."""
    (arr,) = _arr("tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    s = _shape(arr)
    contracting, batch = s[:ind], s[ind:]
    flat = (math.prod(contracting), math.prod(batch))
    if flat[0] != flat[1]:
        raise ValueError(
            "tensorinv is only possible when the product of the first `ind` dimensions equals that of the "
            f"remaining dimensions. got arr.shape={s} with ind={ind}."
        )
    return manipulation.reshape(inv(manipulation.reshape(arr, flat)), batch + contracting)


def tensorsolve(a, b, axes: tuple[int, ...] | None = None):
    """Solve tensordot(a, x, b.ndim) = b for x."""
    a, b = _arr("tensorsolve", a, b)
    if axes is not None:
        nd = len(_shape(a))
        a = manipulation.moveaxis(a, axes, tuple(range(nd - len(axes), nd)))
    sa, sb = _shape(a), _shape(b)
    out_shape = sa[len(sb) :]
    if sa[: len(sb)] != sb:
        raise ValueError(
            f"After moving axes to end, leading shape of a must match shape of b. got a.shape={sa}, b.shape={sb}"
        )
    size_b = math.prod(sb)
    if size_b != math.prod(out_shape):
        raise ValueError(
            f"Input arrays must have prod(a.shape[:b.ndim]) == prod(a.shape[b.ndim:]); got a.shape={sa}, b.ndim={len(sb)}."
        )
    a2 = manipulation.reshape(a, (size_b, math.prod(out_shape)))
    return manipulation.reshape(solve(a2, manipulation.ravel(b)), out_shape)


def lstsq(a, b, rcond: float | None = None, *, numpy_resid: bool = False):
    """Least-squares solution of a x = b via the SVD: (x, resid, rank, s)."""
    a, b = _inexact("jnp.linalg.lstsq", a, b)
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2:
        raise TypeError(f"{len(sa)}-dimensional array given. Array must be two-dimensional")
    if len(sb) not in (1, 2):
        raise TypeError(f"{len(sb)}-dimensional array given. Array must be one or two-dimensional")
    if sa[0] != sb[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_vector = len(sb) == 1
    if b_vector:
        b = manipulation.expand_dims(b, 1)
    m, n = sa
    dtype = _dtype(a)
    rdt = _dtypes.real_dtype(dtype)
    if math.prod(sa) == 0:
        s = creation.empty((0,), dtype=rdt)
        rank = creation.asarray(0, dtype=_dtypes.default_int_dtype())
        x = creation.zeros((n,) + _shape(b)[1:], dtype=dtype)
    else:
        u, s, vt = svd(a, full_matrices=False)
        eps = float(np.finfo(np.dtype(rdt)).eps)
        if rcond is None:
            rcond = eps * max(n, m)
        else:
            rcond = ufuncs.where(ufuncs.less(rcond, 0), eps, rcond)
        cutoff = ufuncs.multiply(
            util.convert_element_type(rcond, rdt) if not hasattr(rcond, "dtype") else rcond.astype(rdt), s[0]
        )
        mask = ufuncs.logical_and(ufuncs.greater(s, 0), ufuncs.greater_equal(s, cutoff))
        rank = reductions.sum(mask)
        safe_s = util.convert_element_type(ufuncs.where(mask, s, 1), dtype)
        s_inv = manipulation.expand_dims(ufuncs.where(mask, ufuncs.divide(1, safe_s), 0), 1)
        utb = _mm(_H(u), b)
        x = _mm(_H(vt), ufuncs.multiply(s_inv, utb))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = creation.asarray(np.zeros((0,), np.dtype(rdt)))
    else:
        r = ufuncs.subtract(b, _mm(a, x))
        resid = ufuncs.power(vector_norm(r, axis=0), 2)
    if b_vector:
        x = manipulation.ravel(x)
    return x, resid, rank, s


# ------------------------------------------------------------------------------------------------
# Determinants.


def _pivot_parity(pivots):
    n = _shape(pivots)[-1]
    swaps = reductions.count_nonzero(ufuncs.not_equal(pivots, np.arange(n, dtype=np.int32)), axis=-1)
    return ufuncs.remainder(swaps, 2)


def _slogdet_lu_impl(a):
    dtype = _dtype(a)
    lu, pivots, _ = _la.lu(a)
    d = _diag(lu)
    is_zero = reductions.any(ufuncs.equal(d, util.convert_element_type(0, dtype)), axis=-1)
    parity = _pivot_parity(pivots)
    if _dtypes.is_complex(dtype):
        sign = reductions.prod(ufuncs.divide(d, util.convert_element_type(ufuncs.abs(d), dtype)), axis=-1)
    else:
        sign = creation.asarray(1, dtype=dtype)
        parity = ufuncs.add(parity, reductions.count_nonzero(ufuncs.less(d, 0), axis=-1))
        parity = ufuncs.remainder(parity, 2)
    flip = util.convert_element_type(ufuncs.subtract(1, ufuncs.multiply(2, parity)), dtype)
    sign = ufuncs.where(is_zero, util.convert_element_type(0, dtype), ufuncs.multiply(sign, flip))
    logdet = ufuncs.where(is_zero, -np.inf, reductions.sum(ufuncs.log(ufuncs.abs(d)), axis=-1))
    return sign, util.convert_element_type(logdet, _dtypes.real_dtype(dtype))


def _slogdet_qr_impl(a):
    if _dtypes.is_complex(_dtype(a)):
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    q, r = _la.qr(a, full_matrices=False)
    d = _diag(r)
    log_abs = reductions.sum(ufuncs.log(ufuncs.abs(d)), axis=-1)
    # det(q) is +-1; its sign comes from q's (well-conditioned) LU factors.
    q_sign, _ = _slogdet_lu_impl(q)
    sign = ufuncs.multiply(reductions.prod(ufuncs.sign(d), axis=-1), q_sign)
    return sign, log_abs


def _slogdet_jvp(impl, primals, tangents):
    (x,), (g,) = primals, tangents
    sign, ans = impl(x)
    ans_dot = trace(solve(x, g))
    if _dtypes.is_complex(_dtype(x)):
        sign_dot = ufuncs.multiply(
            ufuncs.subtract(ans_dot, util.convert_element_type(ufuncs.real(ans_dot), _dtype(ans_dot))), sign
        )
        ans_dot = ufuncs.real(ans_dot)
    else:
        sign_dot = creation.zeros_like(sign)
    return (sign, ans), (sign_dot, ans_dot)


_slogdet_lu = custom_jvp(_slogdet_lu_impl)
_slogdet_lu.defjvp(lambda p, t: _slogdet_jvp(_slogdet_lu_impl, p, t))
_slogdet_qr = custom_jvp(_slogdet_qr_impl)
_slogdet_qr.defjvp(lambda p, t: _slogdet_jvp(_slogdet_qr_impl, p, t))


def slogdet(a, *, method: str | None = None):
    """Sign and natural log of |det(a)|: SlogdetResult(sign, logabsdet); (0, -inf) when singular."""
    (a,) = _inexact("jnp.linalg.slogdet", a)
    _square("slogdet", a)
    if method is None or method == "lu":
        return SlogdetResult(*_slogdet_lu(a))
    if method == "qr":
        return SlogdetResult(*_slogdet_qr(a))
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), and 'qr'.")


def _cofactor_solve(a, b):
    """(det(a), adj(a) b) from a's LU factors; well defined when a has rank n-1 (and zero for
    lower rank), where det(a) a^{-1} b is not."""
    n = _shape(a)[-1]
    dtype = _dtype(a)
    if n == 1:
        return a[..., 0, 0], b
    lu, pivots, perm = _la.lu(a)
    d = _diag(lu)
    parity = _pivot_parity(pivots)
    sign = util.convert_element_type(ufuncs.subtract(1, ufuncs.multiply(2, parity)), dtype)
    partial_det = ufuncs.multiply(reductions.cumprod(d, axis=-1), manipulation.expand_dims(sign, -1))
    # Replacing u_nn by 1/prod(u_ii, i<n) keeps the last solve finite at rank n-1.
    last = np.zeros((n, n), bool)
    last[-1, -1] = True
    corner = ufuncs.divide(util.convert_element_type(1, dtype), partial_det[..., -2])
    lu = ufuncs.where(last, corner[..., None, None], lu)
    probe = _la.triangular_solve(lu, creation.ones(_shape(b)[:-1], dtype=dtype), left_side=True, lower=False)
    bad = reductions.any(ufuncs.logical_or(ufuncs.isnan(probe), ufuncs.isinf(probe)), axis=-1)
    bad = bad[..., None, None]
    zero = util.convert_element_type(0, dtype)
    x = ufuncs.where(bad, zero, b)
    x = _matrix_ops._permute_rows(x, perm)
    x = _la.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = manipulation.concatenate(
        [ufuncs.multiply(x[..., :-1, :], partial_det[..., -1, None, None]), x[..., -1:, :]], axis=-2
    )
    x = _la.triangular_solve(lu, x, left_side=True, lower=False)
    return partial_det[..., -1], ufuncs.where(bad, zero, x)


def _det_impl(a):
    sign, logdet = _slogdet_lu(a)
    return ufuncs.multiply(sign, util.convert_element_type(ufuncs.exp(logdet), _dtype(sign)))


def _det_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    y, z = _cofactor_solve(x, g)
    return y, trace(z)


_det = custom_jvp(_det_impl)
_det.defjvp(_det_jvp)


def det(a):
    """Determinant of a (batch of) square matrix; differentiable also where a has rank n-1."""
    (a,) = _inexact("jnp.linalg.det", a)
    _square("det", a)
    n = _shape(a)[-1]
    if n == 2:
        return ufuncs.subtract(
            ufuncs.multiply(a[..., 0, 0], a[..., 1, 1]), ufuncs.multiply(a[..., 0, 1], a[..., 1, 0])
        )
    if n == 3:
        terms = []
        for (i, j, k), s in (
            ((0, 1, 2), 1),
            ((1, 2, 0), 1),
            ((2, 0, 1), 1),
            ((2, 1, 0), -1),
            ((0, 2, 1), -1),
            ((1, 0, 2), -1),
        ):
            t = ufuncs.multiply(ufuncs.multiply(a[..., 0, i], a[..., 1, j]), a[..., 2, k])
            terms.append((t, s))
        out = terms[0][0]
        for t, s in terms[1:]:
            out = ufuncs.add(out, t) if s > 0 else ufuncs.subtract(out, t)
        return out
    return _det(a)


# ------------------------------------------------------------------------------------------------
# Pseudo-inverse, rank, condition number.


def _pinv_impl(a, rtol, hermitian):
    (arr,) = _inexact("jnp.linalg.pinv", a)
    m, n = _shape(arr)[-2:]
    if m == 0 or n == 0:
        return creation.empty(_shape(arr)[:-2] + (n, m), dtype=_dtype(arr))
    arr = ufuncs.conj(arr)
    rdt = _dtypes.real_dtype(_dtype(arr))
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(np.finfo(np.dtype(rdt)).eps)
    rtol = util.convert_element_type(rtol, rdt) if not hasattr(rtol, "dtype") else rtol
    u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
    rtol = manipulation.expand_dims(rtol, -1)
    cutoff = ufuncs.multiply(rtol, s[..., 0:1])
    s = util.convert_element_type(ufuncs.where(ufuncs.greater(s, cutoff), s, np.inf), _dtype(u))
    res = _mm(
        manipulation.matrix_transpose(vh), ufuncs.divide(manipulation.matrix_transpose(u), s[..., None])
    )
    return util.convert_element_type(res, _dtype(arr))


def _pinv_jvp(rtol, hermitian, primals, tangents):
    # Golub & Pereyra (1973): the derivative of the Moore-Penrose inverse.
    (a,), (a_dot,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    (a, a_dot) = util.promote_dtypes_inexact(a, a_dot)
    if hermitian:
        a, a_dot = _symmetrize(a), _symmetrize(a_dot)
    m, n = _shape(a)[-2:]
    sub, add = ufuncs.subtract, ufuncs.add
    if m >= n:
        s = _mm(_mm(p, _H(p)), _H(a_dot))
        t = _mm(_mm(_H(a_dot), _H(p)), p)
        p_dot = ufuncs.negative(_mm(_mm(p, a_dot), p))
        p_dot = sub(add(sub(add(p_dot, s), _mm(_mm(s, a), p)), t), _mm(_mm(p, a), t))
    else:
        s = _mm(p, _mm(_H(p), _H(a_dot)))
        t = _mm(_H(a_dot), _mm(_H(p), p))
        p_dot = ufuncs.negative(_mm(p, _mm(a_dot, p)))
        p_dot = sub(add(sub(add(p_dot, s), _mm(s, _mm(a, p))), t), _mm(p, _mm(a, t)))
    return p, p_dot


_pinv = custom_jvp(_pinv_impl, nondiff_argnums=(1, 2))
_pinv.defjvp(_pinv_jvp)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse via the SVD; singular values <= rtol * largest are dropped."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    (a,) = _arr("jnp.linalg.pinv", a)
    return _pinv(a, rtol, bool(hermitian))


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):  # noqa: N803 - NumPy's name
    """Number of singular values above rtol (default: largest * max(m, n) * eps)."""
    (M,) = _inexact("jnp.linalg.matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    s_m = _shape(M)
    if len(s_m) < 2:
        return util.convert_element_type(reductions.any(ufuncs.not_equal(M, 0)), np.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    rdt = _dtype(s)
    if rtol is None:
        eps = float(np.finfo(np.dtype(rdt)).eps)
        rtol = ufuncs.multiply(
            reductions.max(s, axis=-1), util.convert_element_type(max(s_m[-2:]) * eps, rdt)
        )
    else:
        (rtol,) = _arr("jnp.linalg.matrix_rank", rtol)
    rtol = manipulation.expand_dims(rtol, len(_shape(rtol)))
    return reductions.sum(ufuncs.greater(s, rtol), axis=-1)


def cond(x, p=None):
    """Condition number in norm `p` (2 / -2 from singular values; others via inv)."""
    (arr,) = _arr("cond", x)
    s = _shape(arr)
    if len(s) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={s}")
    if s[-1] == 0 or s[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={s}")
    if p is None or p == 2:
        sv = svdvals(arr)
        return ufuncs.divide(sv[..., 0], sv[..., -1])
    if p == -2:
        sv = svdvals(arr)
        r = ufuncs.divide(sv[..., -1], sv[..., 0])
    else:
        if s[-2] != s[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got arr.shape={s}")
        r = ufuncs.multiply(norm(arr, ord=p, axis=(-2, -1)), norm(inv(arr), ord=p, axis=(-2, -1)))
    # NaN from an infinite inverse means infinitely ill-conditioned, unless the input had NaNs.
    input_nan = reductions.any(ufuncs.isnan(arr), axis=(-2, -1))
    return ufuncs.where(ufuncs.logical_and(ufuncs.isnan(r), ufuncs.logical_not(input_nan)), np.inf, r)
