"""Sparse linear algebra (JAX's `jax.experimental.sparse.linalg`).

`spsolve` solves A x = b for a CSR matrix A: as JAX does on CPU, the factorization runs on the
host (SciPy's sparse LU through a pure callback); reverse-mode derivatives with respect to the
data and b solve with the transpose. `lobpcg_standard` finds the top eigenpairs of a symmetric
operator."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax


def _host_solve(data, indices, indptr, b, transpose):
    import scipy.sparse
    import scipy.sparse.linalg

    A = scipy.sparse.csr_matrix(
        (np.asarray(data), np.asarray(indices), np.asarray(indptr)), shape=(b.shape[0], b.shape[0])
    )
    if transpose:
        A = A.T.tocsr()
    return np.asarray(scipy.sparse.linalg.spsolve(A, np.asarray(b)), dtype=np.asarray(b).dtype)


def _solve(data, indices, indptr, b, transpose=False):
    shape = morphax.ShapeDtypeStruct(b.shape, b.dtype)
    return morphax.pure_callback(lambda *a: _host_solve(*a, transpose), shape, data, indices, indptr, b)


@morphax.custom_vjp
def _spsolve(data, indices, indptr, b):
    return _solve(data, indices, indptr, b)


def _spsolve_fwd(data, indices, indptr, b):
    x = _solve(data, indices, indptr, b)
    return x, (data, indices, indptr, x)


def _spsolve_bwd(res, ct):
    from morphax.experimental.sparse.bcsr import csr_rows

    data, indices, indptr, x = res
    # x = A^{-1} b: the cotangent of b is A^{-T} ct, that of A is -(A^{-T} ct) x^T, read at
    # the stored elements.
    ct_b = _solve(data, indices, indptr, ct, transpose=True)
    rows = csr_rows(indptr, data.shape[0])
    ct_data = -ct_b.at[rows].get(mode="fill", fill_value=0) * x.at[indices].get(mode="fill", fill_value=0)
    return ct_data, None, None, ct_b


_spsolve.defvjp(_spsolve_fwd, _spsolve_bwd)


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
    """x with A x = b, A the square CSR matrix (data, indices, indptr)."""
    data, indices, indptr, b = (jnp.asarray(a) for a in (data, indices, indptr, b))
    if b.ndim != 1:
        raise ValueError(f"spsolve: b must be a vector, got shape {b.shape}")
    return _spsolve(data, indices, indptr, b)


# ------------------------------------------------------------------------------------- LOBPCG


def _project_out(X, B):
    """B without its components along the orthonormal columns of X (twice, for stability)."""
    for _ in range(2):
        B = B - X @ (X.T @ B)
    return B


def _search_basis(X, B, eps):
    """(Q, keep): an orthonormal basis of the span of B's columns orthogonal to X, from the
    eigendecomposition of their Gram matrix after scaling each column to unit norm (so that tiny
    residuals near convergence keep their directions); directions whose Gram eigenvalue is
    negligible are dropped (their columns of Q are zero, `keep` False)."""
    B = _project_out(X, B)
    norms = jnp.linalg.norm(B, axis=0)
    B = B / jnp.where(norms > 0, norms, 1)[None, :]
    keep = None
    for _ in range(2):
        G = B.T @ B
        w, V = jnp.linalg.eigh((G + G.T) / 2)
        ok = w > eps * B.shape[1] * 100
        keep = ok if keep is None else keep & ok
        B = B @ (V * jnp.where(ok, 1 / jnp.sqrt(jnp.where(ok, w, 1)), 0)[None, :])
        B = _project_out(X, B)
    return B, keep


def lobpcg_standard(A, X, m=100, tol=None):
    """The k largest eigenvalues and eigenvectors of the symmetric (n, n) `A` (an array, a sparse
    array or a function computing ``A @ V``), from the initial (n, k) directions `X` (0 < 5k < n):
    ``(theta, U, i)`` with theta (k,) in decreasing order, U (n, k) and the iteration count.

    Locally optimal block preconditioned conjugate gradient (Knyazev) without preconditioning:
    each step is a Rayleigh-Ritz projection onto the span of the current vectors X, their
    residuals R and the previous update P, kept orthonormal; directions of the basis that became
    dependent are excluded from the projection. A pair converges when its residual norm is below
    ``tol * 10 * n * (|lambda| + |A v|)`` (tol defaults to the dtype's epsilon), as JAX's."""
    matvec = A if callable(A) else (lambda v: A @ v)
    X = jnp.asarray(X)
    n, k = X.shape
    if not 0 < 5 * k < n:
        raise ValueError(f"lobpcg_standard: requires 0 < 5k < n for X of shape {X.shape}")
    dtype = X.dtype
    eps = float(jnp.finfo(dtype).eps)
    tol = eps if tol is None else tol
    X, _ = jnp.linalg.qr(X)
    AX = matvec(X)
    theta = jnp.sum(X * AX, axis=0)
    P = jnp.zeros_like(X)

    def converged(X, AX, theta):
        r = jnp.linalg.norm(AX - X * theta[None, :], axis=0)
        return jnp.all(r < tol * 10 * n * (jnp.abs(theta) + jnp.linalg.norm(AX, axis=0)))

    def cond(state):
        i, X, AX, theta, P = state
        return (i < m) & ~converged(X, AX, theta)

    def body(state):
        i, X, AX, theta, P = state
        R = AX - X * theta[None, :]
        B, keep_b = _search_basis(X, jnp.concatenate([R, P], axis=1), eps)
        Q = jnp.concatenate([X, B], axis=1)
        keep = jnp.concatenate([jnp.ones(k, bool), keep_b])
        AQ = matvec(Q)
        T = Q.T @ AQ
        T = (T + T.T) / 2
        both = keep[:, None] & keep[None, :]
        # Dropped directions get an eigenvalue below every real one, so they never rank in the top k.
        low = -(jnp.max(jnp.abs(T)) + 1) * 4
        T = jnp.where(both, T, 0) + jnp.diag(jnp.where(keep, 0, low))
        vals, C = jnp.linalg.eigh(T)
        C = C[:, ::-1][:, :k]
        X_new = Q @ C
        AX_new = AQ @ C
        X_new, tri = jnp.linalg.qr(X_new)  # guard the Ritz vectors' orthonormality
        AX_new = AX_new @ jnp.linalg.inv(tri)
        P_new = X_new - X @ (X.T @ X_new)
        return i + 1, X_new, AX_new, vals[::-1][:k].astype(dtype), P_new

    i, X, AX, theta, P = lax.while_loop(cond, body, (jnp.asarray(0), X, AX, theta, P))
    return theta, X, i
