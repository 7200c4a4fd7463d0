"""`morphax.scipy.linalg`: SciPy's linear algebra on morphax arrays, mirroring
``jax.scipy.linalg``: the decompositions and solvers (on the lax.linalg primitives, so they
differentiate and batch), the matrix exponential, and SciPy's special matrices (batched over
leading axes where JAX batches them).
"""

from __future__ import annotations

import math
import operator

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util
from morphax.scipy._linalg_frechet_qr_tridiagonal import eigh_tridiagonal, expm_frechet, qr_multiply  # noqa: F401
from morphax.scipy._matrix_functions import funm, hessenberg, rsf2csf, schur, solve_sylvester, sqrtm  # noqa: F401
from morphax.scipy.special import gammaln

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "convolution_matrix",
    "det", "dft", "eigh", "expm", "fiedler", "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert",
    "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve", "pascal", "polar", "qr",
    "solve", "solve_triangular", "svd", "toeplitz",
]  # fmt: skip


def _inexact(name, *args):
    _util.check_arraylike(name, *args)
    return _util.promote_dtypes_inexact(*args)


# ----------------------------------------------------------------------- decompositions, solvers


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of Hermitian positive definite `a`: upper (U^H U = a) unless `lower`."""
    (a,) = _inexact("cholesky", a)
    factor = lax.linalg.cholesky(a, symmetrize_input=False)
    return factor if lower else jnp.conj(jnp.swapaxes(factor, -1, -2))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(factor, lower) for `cho_solve`."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve a x = b from `cho_factor`'s result."""
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)
    if not lower:
        c = jnp.conj(jnp.swapaxes(c, -1, -2))
    vector = b.ndim == c.ndim - 1
    rhs = b[..., None] if vector else b
    y = lax.linalg.triangular_solve(c, rhs, left_side=True, lower=True)
    x = lax.linalg.triangular_solve(c, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    return x[..., 0] if vector else x


def solve_triangular(
    a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, debug=None, check_finite=True
):
    """Solve a x = b (trans 0 / "N"), a^T x = b (1 / "T") or a^H x = b (2 / "C") for triangular a."""
    a, b = _inexact("solve_triangular", a, b)
    transpose, conjugate = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
                            2: (True, True), "C": (True, True)}[trans]  # fmt: skip
    vector = b.ndim == a.ndim - 1
    rhs = b[..., None] if vector else b
    x = lax.linalg.triangular_solve(
        a,
        rhs,
        left_side=True,
        lower=lower,
        transpose_a=transpose,
        conjugate_a=conjugate,
        unit_diagonal=unit_diagonal,
    )
    return x[..., 0] if vector else x


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, pivots): L (unit diagonal, below) and U packed in one matrix, and the row swaps."""
    (a,) = _inexact("lu_factor", a)
    lu_, pivots, _ = lax.linalg.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve a x = b (or a^T x = b for trans 1, a^H x = b for 2) from `lu_factor`'s result."""
    lu_, pivots = lu_and_piv
    lu_, b = _inexact("lu_solve", lu_, b)
    m = lu_.shape[-1]
    perm = lax.linalg.lu_pivots_to_permutation(pivots, m)
    vector = b.ndim == lu_.ndim - 1
    rhs = b[..., None] if vector else b
    if trans == 0:
        rhs = jnp.take_along_axis(rhs, perm[..., None], axis=-2) if rhs.ndim > 2 else rhs[perm]
        y = lax.linalg.triangular_solve(lu_, rhs, left_side=True, lower=True, unit_diagonal=True)
        x = lax.linalg.triangular_solve(lu_, y, left_side=True, lower=False)
    else:
        conj = trans == 2
        y = lax.linalg.triangular_solve(
            lu_, rhs, left_side=True, lower=False, transpose_a=True, conjugate_a=conj
        )
        z = lax.linalg.triangular_solve(
            lu_, y, left_side=True, lower=True, transpose_a=True, conjugate_a=conj, unit_diagonal=True
        )
        inverse = jnp.argsort(perm, axis=-1)
        x = jnp.take_along_axis(z, inverse[..., None], axis=-2) if z.ndim > 2 else z[inverse]
    return x[..., 0] if vector else x


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(p, l, u) with a = p @ l @ u, or (p @ l, u) with `permute_l`."""
    (a,) = _inexact("lu", a)
    lu_, _, perm = lax.linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lower = jnp.tril(lu_, -1)[..., :, :k] + jnp.eye(m, k, dtype=a.dtype)
    upper = jnp.triu(lu_)[..., :k, :]
    p = jnp.swapaxes(jnp.eye(m, dtype=a.dtype)[perm], -1, -2)
    if permute_l:
        return jnp.matmul(p, lower), upper
    return p, lower, upper


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """(q, r) ("full" or "economic"), r alone ("r"); pivoting is not supported."""
    if pivoting:
        raise NotImplementedError("The pivoting=True case of qr is not implemented.")
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = _inexact("qr", a)
    q, r = lax.linalg.qr(a, full_matrices=mode in ("full", "r"))
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, lapack_driver="gesdd"):
    """The singular value decomposition (u, s, vh), or s alone without `compute_uv`."""
    (a,) = _inexact("svd", a)
    return jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(
    a,
    b=None,
    lower=True,
    eigvals_only=False,
    overwrite_a=False,
    overwrite_b=False,
    turbo=True,
    eigvals=None,
    type=1,
    check_finite=True,
):  # noqa: A002 - SciPy's name
    """Eigenvalues (ascending) and eigenvectors of Hermitian `a`; the generalized problem (b) is
    not supported."""  # fmt: skip
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    (a,) = _inexact("eigh", a)
    v, w = lax.linalg.eigh(a, lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


def det(a, overwrite_a=False, check_finite=True):
    return jnp.linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    return jnp.linalg.inv(a)


det.__doc__ = "The determinant of `a`."
inv.__doc__ = "The inverse of `a`."


def solve(
    a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, check_finite=True, assume_a="gen"
):
    """Solve a x = b; assume_a "pos" uses a Cholesky factorization, "sym"/"her"/"gen" an LU."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of {'gen', 'sym', 'her', 'pos'}, got {assume_a}.")
    a, b = _inexact("solve", a, b)
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return jnp.linalg.solve(a, b)


def polar(a, side="right", *, method="svd", eps=None, max_iterations=None):
    """The polar decomposition a = u p ("right") or p u ("left"): u unitary, p positive
    semidefinite, from the SVD."""
    if method != "svd":
        raise NotImplementedError(f"polar: method={method!r} (only 'svd' here).")
    (a,) = _inexact("polar", a)
    u_svd, s, vh = jnp.linalg.svd(a, full_matrices=False)
    unitary = u_svd @ vh
    if side == "right":
        p = (jnp.conj(vh.T) * s) @ vh
    elif side == "left":
        p = (u_svd * s) @ jnp.conj(u_svd.T)
    else:
        raise ValueError(f"side={side!r} is not 'right' or 'left'")
    return unitary, p


# ------------------------------------------------------------------------ the matrix exponential

# Padé coefficients of degree 3, 5, 7, 9 and 13 (Higham 2005), and the 1-norm bounds below which
# each degree is accurate to double precision (float32: degrees 3, 5, 7).
_PADE = {
    3: [120.0, 60.0, 12.0, 1.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0,
        90.0, 1.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0,
         1.0],
}  # fmt: skip
_THETA = {
    np.dtype(np.float64): [(3, 1.495585217958292e-002), (5, 2.539398330063230e-001), (7, 9.504178996162932e-001),
                           (9, 2.097847961257068e000)],
    np.dtype(np.float32): [(3, 4.258730016922831e-001), (5, 1.880152677804762e000)],
}  # fmt: skip
_THETA_MAX = {
    np.dtype(np.float64): (13, 5.371920351148152e000),
    np.dtype(np.float32): (7, 3.925724783138660e000),
}


def _pade(a, degree):
    b = _PADE[degree]
    eye = jnp.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    if degree == 13:
        a4, a6 = a2 @ a2, None
        a6 = a4 @ a2
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
        return u, v
    powers = [eye, a2]
    while len(powers) <= degree // 2:
        powers.append(powers[-1] @ a2)
    u = a @ sum(b[2 * k + 1] * powers[k] for k in range(degree // 2 + 1))
    v = sum(b[2 * k] * powers[k] for k in range(degree // 2 + 1))
    return u, v


def expm(A, *, upper_triangular=False, max_squarings=16):  # noqa: N803 - SciPy's name
    """exp(A) by scaling and squaring with Padé approximants (Higham 2005): the lowest degree
    accurate for A's 1-norm, else degree 13 (7 in float32) on A / 2**s, squared s times."""
    (a,) = _inexact("expm", A)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expects a square matrix (or a stack of them), got shape {a.shape}")
    if a.ndim > 2:
        return jnp.vectorize(lambda m: expm(m, max_squarings=max_squarings), signature="(n,n)->(n,n)")(a)
    real = np.dtype(_dtypes.real_dtype(a.dtype)) if jnp.iscomplexobj(a) else a.dtype
    real = np.dtype(np.float64) if real == np.float64 else np.dtype(np.float32)
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=0))
    top_degree, top_theta = _THETA_MAX[real]
    s = jnp.maximum(0, jnp.floor(jnp.log2(norm / top_theta)) + 1)
    s = jnp.minimum(s, max_squarings)
    scaled = a / jnp.power(2.0, s).astype(a.dtype)

    def approximant(m, degree):
        u, v = _pade(m, degree)
        return jnp.linalg.solve(v - u, v + u)

    result = approximant(scaled, top_degree)
    result = lax.fori_loop(0, s.astype(jnp.int32), lambda _, r: r @ r, result)
    for degree, theta in reversed(_THETA[real]):
        result = jnp.where(norm < theta, approximant(a, degree), result)
    return jnp.where(jnp.isfinite(norm), result, jnp.full_like(a, np.nan))


# ---------------------------------------------------------------------------- special matrices


def block_diag(*arrs):
    """A block-diagonal matrix of the given (at most 2-D) blocks."""
    if not arrs:
        arrs = (jnp.zeros((1, 0)),)
    _util.check_arraylike("block_diag", *arrs)
    arrs = _util.promote_dtypes(*arrs)
    bad = [i for i, a in enumerate(arrs) if np.ndim(a) > 2]
    if bad:
        raise ValueError(
            "Arguments to jax.scipy.linalg.block_diag must have at most 2 dimensions, got "
            f"{arrs[bad[0]]} at argument {bad[0]}."
        )
    blocks = [jnp.atleast_2d(a) for a in arrs]
    total = sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        rows.append(jnp.pad(b, ((0, 0), (col, total - col - b.shape[1]))))
        col += b.shape[1]
    return jnp.concatenate(rows, axis=0)


def _toeplitz_one(c, r):
    m, n = c.shape[0], r.shape[0]
    if m == 0 or n == 0:
        return jnp.zeros((m, n), dtype=jnp.result_type(c, r))
    elems = jnp.concatenate((c[::-1], r[1:]))
    return elems[(m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]]


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (default conj(c)); batched over
    leading axes."""
    _util.check_arraylike("toeplitz", c) if r is None else _util.check_arraylike("toeplitz", c, r)
    c = jnp.atleast_1d(jnp.asarray(c))
    r = jnp.conj(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    c, r = _util.promote_dtypes(c, r)
    return jnp.vectorize(_toeplitz_one, signature="(m),(n)->(m,n)")(c, r)


def _hankel_one(c, r):
    m, n = c.shape[0], r.shape[0]
    if m == 0 or n == 0:
        return jnp.zeros((m, n), dtype=jnp.result_type(c, r))
    elems = jnp.concatenate((c, r[1:]))
    return elems[np.arange(m)[:, None] + np.arange(n)[None, :]]


def hankel(c, r=None):
    """The Hankel matrix with first column c and last row r (default zeros); batched."""
    _util.check_arraylike("hankel", c) if r is None else _util.check_arraylike("hankel", c, r)
    c = jnp.asarray(c)
    r = jnp.zeros_like(c) if r is None else jnp.asarray(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    c, r = _util.promote_dtypes(c, r)
    return jnp.vectorize(_hankel_one, signature="(m),(n)->(m,n)")(c, r)


def circulant(c):
    """The circulant matrix with first column c; batched."""
    _util.check_arraylike("circulant", c)
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def leslie(f, s):
    """The Leslie matrix: fecundities f in the first row, survival rates s below the diagonal."""
    _util.check_arraylike("leslie", f, s)
    f, s = jnp.atleast_1d(f), jnp.atleast_1d(s)
    if f.shape[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape {f.shape}.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(
            "Incorrect lengths for f and s. The length of s along the last axis must be one less than the "
            f"length of f; got f shape {f.shape} and s shape {s.shape}."
        )
    f, s = _util.promote_dtypes(f, s)
    return jnp.vectorize(lambda f_, s_: jnp.diag(s_, k=-1).at[0].set(f_), signature="(n),(m)->(n,n)")(f, s)


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest degree first)."""
    (a,) = _inexact("companion", a)
    a = jnp.atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape {a.shape}.")

    def one(p):
        m = p.shape[0] - 1
        return jnp.eye(m, m, k=-1, dtype=p.dtype).at[0].set(-p[1:] / p[0])

    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


def fiedler(a):
    """The symmetric Fiedler matrix |a_i - a_j|; batched."""
    _util.check_arraylike("fiedler", a)
    a = jnp.atleast_1d(a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial a (pentadiagonal, same eigenvalues as the
    companion matrix)."""
    (a,) = _inexact("fiedler_companion", a)
    a = jnp.atleast_1d(a)
    if a.shape[-1] == 0:
        raise ValueError(
            f"fiedler_companion requires the last axis of 'a' to have nonzero length, but got an array of shape {a.shape}."
        )

    def one(p):
        n = p.shape[0] - 1
        if n == 0:
            return jnp.zeros((0, 0), p.dtype)
        p = p / p[0]
        if n == 1:
            return -p[1:].reshape(1, 1)
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        above, below = -p[np.minimum(i + 2, n)], -p[np.minimum(i + 1, n)]
        even, odd = i % 2 == 0, i % 2 == 1
        out = jnp.zeros((n, n), p.dtype)
        out = jnp.where((j == i - 2) & odd & (i >= 3), 1, out)
        out = jnp.where((j == i - 1) & even & (i >= 2), below, out)
        out = jnp.where((j == i + 2) & even, 1, out)
        out = jnp.where((j == i + 1) & even, above, out)
        out = jnp.where((i == 1) & (j == 0), 1, out)
        return jnp.where((i == 0) & (j == 0), -p[1], out)

    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


def convolution_matrix(a, n, mode="full"):
    """The matrix whose product with a length-n vector is its convolution with a ('full', 'valid'
    or 'same', as np.convolve)."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    _util.check_arraylike("convolution_matrix", a)
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    widths = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    az, raz = jnp.pad(a, widths), jnp.pad(jnp.flip(a, axis=-1), widths)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb : length - te], raz[..., length - n - tb : length - tb])


def _binom(n, k):
    return jnp.exp(gammaln(n + 1.0) - gammaln(n - k + 1.0) - gammaln(k + 1.0))


def hilbert(n):
    """The n x n Hilbert matrix 1 / (i + j + 1)."""
    a = np.arange(n, dtype=np.float64)[:, None]
    return jnp.asarray(1 / (a + a.T + 1), dtype=_dtypes.default_float_dtype())


def invhilbert(n, exact=False):
    """The inverse of the n x n Hilbert matrix (floats; exact integers are not supported)."""
    if exact:
        raise NotImplementedError("invhilbert with exact=True")
    a = jnp.arange(n, dtype=_dtypes.default_float_dtype())
    i, j = a[:, None], a[None, :]
    s = i + j
    return (-1.0) ** s * (s + 1.0) * _binom(n + i, n - j - 1) * _binom(n + j, n - i - 1) * _binom(s, i) ** 2


def _pascal_kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be one of: ['symmetric', 'lower', 'upper']; got {kind}")
    return kind


def pascal(n, kind=None, exact=True):
    """The Pascal matrix ("symmetric", "lower" or "upper" triangular binomial coefficients)."""
    kind = _pascal_kind(kind)
    a = jnp.arange(n, dtype=np.float32)
    lower = _binom(a[:, None], a[None, :])
    if kind == "lower":
        return lower
    if kind == "upper":
        return lower.T
    return lower @ lower.T


def invpascal(n, kind=None, exact=True):
    """The inverse of the Pascal matrix of that kind."""
    kind = _pascal_kind(kind)
    a = jnp.arange(n, dtype=_dtypes.default_float_dtype())
    i, j = a[:, None], a[None, :]
    lower_inv = (-1.0) ** (i - j) * _binom(i, j)
    if kind == "lower":
        return lower_inv
    if kind == "upper":
        return lower_inv.T
    return lower_inv.T @ lower_inv


def helmert(n, full=False):
    """The (n-1) x n Helmert contrast matrix (n x n with the constant first row if `full`)."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    i, j = np.arange(n - 1)[:, None], np.arange(n)[None, :]
    k = (i + 1).astype(np.float64)
    denom = np.sqrt(k * (k + 1))
    h = np.where(j <= i, 1.0 / denom, np.where(j == i + 1, -k / denom, 0.0))
    if full:
        h = np.concatenate([np.full((1, n), 1.0 / np.sqrt(n)), h], axis=0)
    return jnp.asarray(h, dtype=_dtypes.default_float_dtype())


def hadamard(n, dtype=int):
    """The n x n Hadamard matrix (Sylvester's construction; n a power of 2)."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1), dtype=np.int64)
    for _ in range(int(math.log2(n))):
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype=dtype)


def dft(n, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix exp(-2 pi i jk / n) (scaled by 1/sqrt(n) or 1/n)."""
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    dtype = _dtypes.default_complex_dtype() if dtype is None else np.dtype(dtype)
    if not jnp.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    a = jnp.arange(n, dtype=dtype)
    omegas = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        return omegas / np.sqrt(n)
    return omegas / n if scale == "n" else omegas
