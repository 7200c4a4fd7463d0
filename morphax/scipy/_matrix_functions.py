"""The Schur family of `morphax.scipy.linalg`: schur, rsf2csf, hessenberg, and what the complex
Schur form T = Z^H A Z makes easy -- sqrtm (Björck-Hammarling), funm (Parlett's recurrence) and
solve_sylvester (Bartels-Stewart, or eigendecompositions). The triangular recurrences run one
superdiagonal (or one column) at a time with matrix products, so they batch and jit; like JAX,
only rsf2csf differentiates (schur and hessenberg have no derivative rules)."""

from __future__ import annotations

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util

__all__ = ["funm", "hessenberg", "rsf2csf", "schur", "solve_sylvester", "sqrtm"]

_HIGHEST = lax.Precision.HIGHEST


def _matmul(a, b):
    return jnp.matmul(a, b, precision=_HIGHEST)


def _mH(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def _to_complex(dtype):
    return _dtypes.to_complex_dtype(_dtypes.to_inexact_dtype(dtype))


def _square(name, argname, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name}: {argname} must be a square matrix (..., N, N), got shape {x.shape}.")


# ------------------------------------------------------------------------- schur and hessenberg


def schur(a, output="real"):
    """Schur decomposition a = Z T Z^H: (T, Z). T is upper triangular for output='complex' and
    quasi upper triangular (2x2 blocks for complex conjugate pairs) for output='real' with real a."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got {output=}.")
    a = _util.checked_array("schur", a)
    if output == "complex":
        a = a.astype(_to_complex(a.dtype))
    t, z = lax.linalg.schur(a)
    return t, z


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """Upper Hessenberg form a = Q H Q^H: H, or (H, Q) with `calc_q`. overwrite_a and check_finite
    are accepted and unused."""
    del overwrite_a, check_finite
    a = _util.checked_array("hessenberg", a)
    n = a.shape[-1] if a.ndim else 0
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    packed, taus = lax.linalg.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    # The reflectors act on rows 1..n-1: Q is 1 (+) the product of the packed vectors below H.
    q_tail = lax.linalg.householder_product(packed[..., 1:, :-1], taus)
    batch = packed.shape[:-2]
    dt = packed.dtype
    q = jnp.block(
        [
            [jnp.ones(batch + (1, 1), dt), jnp.zeros(batch + (1, n - 1), dt)],
            [jnp.zeros(batch + (n - 1, 1), dt), q_tail],
        ]
    )
    return h, q


# ---------------------------------------------------------------------------------- rsf2csf


def _rsf2csf_2d(t, z):
    n = t.shape[0]
    if n == 1:
        return t, z
    eps = float(np.finfo(_dtypes.real_dtype(t.dtype)).eps)
    cols = jnp.arange(n)

    def rotate(m, t, z):
        # A Givens rotation built from one eigenvalue of the 2x2 block at (m-1, m-1) zeroes t[m, m-1].
        block = lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))
        mu = jnp.linalg.eigvals(block) - t[m, m]
        r = jnp.linalg.norm(jnp.stack([mu[0], t[m, m - 1]])).astype(t.dtype)
        c, s = mu[0] / r, t[m, m - 1] / r
        g = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
        rows = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
        right = cols >= m - 1
        rows = jnp.where(right, _matmul(g, jnp.where(right, rows, 0)), rows)
        t = lax.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
        pair = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=1)
        top = (cols < m + 1)[:, None]
        pair = jnp.where(top, _matmul(jnp.where(top, pair, 0), _mH(g)), pair)
        t = lax.dynamic_update_slice_in_dim(t, pair, m - 1, axis=1)
        zpair = _matmul(lax.dynamic_slice_in_dim(z, m - 1, 2, axis=1), _mH(g))
        return t, lax.dynamic_update_slice_in_dim(z, zpair, m - 1, axis=1)

    def step(i, tz):
        t, z = tz
        m = n - i
        sub = jnp.abs(t[m, m - 1])
        t, z = lax.cond(
            sub > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m])), rotate, lambda m, t, z: (t, z), m, t, z
        )
        return t.at[m, m - 1].set(0), z

    return lax.fori_loop(1, n, step, (t, z))


def rsf2csf(T, Z, check_finite=True):  # noqa: N803 - SciPy's names
    """Convert a real Schur form (T, Z) of a matrix to the complex one: T upper triangular, Z
    unitary, both complex, with Z T Z^H unchanged. Batch dims of T and Z broadcast."""
    del check_finite
    _util.check_arraylike("rsf2csf", T, Z)
    t, z = jnp.asarray(T), jnp.asarray(Z)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if z.ndim < 2 or z.shape[-1] != z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if t.shape[-1] != z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {z.shape} vs. T: {t.shape}")
    t, z = _util.promote_dtypes_inexact(t, z)
    dt = _to_complex(t.dtype)
    t, z = t.astype(dt), z.astype(dt)
    return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)


# ----------------------------------------------------------------------------------- sqrtm


def _superdiagonal_mask(n, d):
    i = lax.broadcasted_iota(np.int32, (n, n), 0)
    j = lax.broadcasted_iota(np.int32, (n, n), 1)
    return (j - i) == d


def _sqrtm_triu(t):
    """Square root U of upper triangular t (Björck and Hammarling 1983), one superdiagonal at a
    time: with the diagonals below d filled in, (U U)[i, i+d] is exactly the sum the recurrence
    needs, so U[i, i+d] = (t[i, i+d] - (U U)[i, i+d]) / (U[i, i] + U[i+d, i+d])."""
    n = t.shape[-1]
    root = jnp.sqrt(jnp.diagonal(t, axis1=-2, axis2=-1))
    u = root[..., :, None] * jnp.eye(n, dtype=t.dtype)
    den = root[..., :, None] + root[..., None, :]

    def fill(d, u):
        s = _matmul(u, u)
        # A zero denominator with nothing to divide (t == s) gives 0, as JAX and SciPy do.
        val = jnp.where(t == s, jnp.zeros((), t.dtype), (t - s) / den)
        return jnp.where(_superdiagonal_mask(n, d), val, u)

    return lax.fori_loop(1, n, fill, u)


def sqrtm(A, blocksize=1):  # noqa: N803 - SciPy's name
    """Principal matrix square root from the complex Schur form (Björck-Hammarling): complex
    result, as in JAX. Only blocksize=1 is implemented (SciPy's blocked variant is a speed-up)."""
    if blocksize > 1:
        raise NotImplementedError(
            "sqrtm: the blocked version (blocksize > 1) is not implemented; use blocksize=1."
        )
    a = _util.checked_array("sqrtm", A)
    # NB: JAX accepts one matrix only; leading batch dims work here.
    _square("sqrtm", "A", a)
    t, z = schur(a, output="complex")
    return _matmul(_matmul(z, _sqrtm_triu(t)), _mH(z))


# ------------------------------------------------------------------------------------ funm


def _parlett(f, t):
    """Fill the strict upper triangle of F = f(t) for upper triangular t from its diagonal
    (Golub and Van Loan, Algorithm 11.1.1), one superdiagonal at a time: with the diagonals below p
    filled in, (t F - F t)[i, j] is the recurrence's numerator. Also returns the smallest |t_jj -
    t_ii| met (starting from |t_00|), which SciPy's error estimate uses."""
    n = t.shape[-1]
    minden = jnp.abs(t[0, 0])
    den = jnp.diagonal(t)[None, :] - jnp.diagonal(t)[:, None]

    def fill(p, state):
        f, minden = state
        s = _matmul(t, f) - _matmul(f, t)
        val = jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s)
        mask = _superdiagonal_mask(n, p)
        minden = jnp.minimum(minden, jnp.min(jnp.where(mask, jnp.abs(den), jnp.inf)))
        return jnp.where(mask, val, f), minden

    return lax.fori_loop(1, n, fill, (f, minden))


def funm(A, func, disp=True):  # noqa: N803 - SciPy's name
    """The matrix function f(A) for a scalar function `func` (applied to the eigenvalues, as an
    elementwise array function), from the complex Schur form and Parlett's recurrence: a complex
    result. With disp=False, (F, err) where err estimates the relative error, as SciPy's."""
    a = _util.checked_array("funm", A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"funm: expected square array_like input, got shape {a.shape}.")
    t, z = schur(a)
    t, z = rsf2csf(t, z)
    f = jnp.diag(func(jnp.diagonal(t))).astype(t.dtype)
    f, minden = _parlett(f, t)
    f = _matmul(_matmul(z, f), _mH(z))
    if disp:
        return f
    tol = float(np.finfo(_dtypes.real_dtype(f.dtype)).eps)
    minden = jnp.where(minden == 0, tol, minden)
    bound = (tol / minden) * jnp.linalg.norm(jnp.triu(t, 1), 1)
    err = jnp.where(jnp.any(jnp.isinf(f)), jnp.inf, jnp.minimum(1, jnp.maximum(tol, bound)))
    return f, err


# -------------------------------------------------------------------------- solve_sylvester


def _triangular_sylvester(r, lower, f):
    """Y with r Y + Y lower = f for upper triangular r (m x m) and lower triangular `lower` (n x n),
    column by column from the last: (r + lower[j, j] I) y_j = f_j - sum_{k > j} y_k lower[k, j]."""
    m, n = f.shape
    eye = jnp.eye(m, dtype=r.dtype)

    def column(i, y):
        j = n - 1 - i
        rhs = f[:, j] - _matmul(y, lower[:, j])  # columns <= j of y are still zero
        shifted = r + lower[j, j] * eye
        col = lax.linalg.triangular_solve(shifted, rhs[:, None], left_side=True, lower=False)[:, 0]
        return lax.dynamic_update_slice_in_dim(y, col[:, None], j, axis=1)

    return lax.fori_loop(0, n, column, jnp.zeros((m, n), f.dtype))


def _solve_sylvester_2d(a, b, c, *, method, tol):
    m, n = c.shape[-2:]
    if method == "schur":
        # a = U R U^H and b^H = V S V^H turn a x + x b = c into R Y + Y S^H = U^H c V, x = U Y V^H.
        r, u = schur(a, output="complex")
        s, v = schur(_mH(b), output="complex")
        f = _matmul(_matmul(_mH(u), c.astype(r.dtype)), v)
        y = _triangular_sylvester(r, _mH(s), f)
        x = _matmul(_matmul(u, y), _mH(v))
    elif method == "eigen":
        ra, ua = jnp.linalg.eig(a)
        rb, ub = jnp.linalg.eig(b)
        f = jnp.linalg.solve(ua, _matmul(c.astype(ra.dtype), ub))
        y = f / (ra[:, None] + rb[None, :])
        x = _matmul(_matmul(ua[:m, :m], y[:m, :n]), jnp.linalg.inv(ub)[:n, :n])
    else:
        raise ValueError(
            f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".'
        )
    if not _dtypes.is_complex(c.dtype):
        x = x.real
    # Nearly opposite eigenvalues of a and b make the equation singular: NaNs, as JAX.
    gaps = jnp.abs(jnp.linalg.eigvals(a)[:, None] + jnp.linalg.eigvals(b)[None, :])
    return jnp.where(jnp.any(gaps < tol), jnp.full_like(x, jnp.nan), x)


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):  # noqa: N803 - SciPy's names
    """Solve the Sylvester equation A X + X B = C: method="schur" (Bartels-Stewart on the complex
    Schur forms, the default) or "eigen" (through eigendecompositions: faster, less accurate for
    non-normal matrices). Where some eigenvalue of A plus one of B is within `tol` of zero, NaNs.
    Batch dims of A (..., m, m), B (..., n, n) and C (..., m, n) broadcast."""
    _util.check_arraylike("solve_sylvester", A, B, C)
    a, b, c = _util.promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
    if c.ndim < 2 or a.ndim < 2 or b.ndim < 2:
        raise ValueError(
            f"Incompatible shapes for Sylvester equation:\nA: {a.shape}\nB: {b.shape}\nC: {c.shape}"
        )
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise ValueError(
            f"Incompatible shapes for Sylvester equation:\nA: {a.shape}\nB: {b.shape}\nC: {c.shape}"
        )
    if method not in ("schur", "eigen"):
        raise ValueError(
            f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".'
        )

    def one(a, b, c):
        return _solve_sylvester_2d(a, b, c, method=method, tol=tol)

    return jnp.vectorize(one, signature="(m,m),(n,n),(m,n)->(m,n)")(a, b, c)
