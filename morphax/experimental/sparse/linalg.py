"""`spsolve`: solve A x = b for a CSR matrix A. As JAX does on CPU, the factorization runs on the
host (SciPy's sparse LU through a pure callback); reverse-mode derivatives with respect to the
data and b solve with the transpose."""

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
