"""`spsolve`: solve A x = b for a CSR matrix A. As JAX does on CPU, the factorization runs on the
host (SciPy's sparse LU through a pure callback); the derivative follows from the solve."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp


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


@morphax.custom_jvp
def _spsolve(data, indices, indptr, b):
    return _solve(data, indices, indptr, b)


@_spsolve.defjvp
def _spsolve_jvp(primals, tangents):
    from morphax.experimental.sparse._coo_csr import CSR, csr_matvec

    data, indices, indptr, b = primals
    ddata, _, _, db = tangents
    x = _spsolve(data, indices, indptr, b)
    # d x = A^{-1} (db - dA x)
    A_dot = CSR((ddata, indices, indptr), shape=(b.shape[0], b.shape[0]))
    rhs = db - csr_matvec(A_dot, x)
    return x, _spsolve(data, indices, indptr, rhs)


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
    """x with A x = b, A the square CSR matrix (data, indices, indptr)."""
    data, indices, indptr, b = (jnp.asarray(a) for a in (data, indices, indptr, b))
    if b.ndim != 1:
        raise ValueError(f"spsolve: b must be a vector, got shape {b.shape}")
    return _spsolve(data, indices, indptr, b)
