"""The legacy CSR/CSC formats (JAX's `jax.experimental.sparse.csr`; implemented in _coo_csr.py)."""

from morphax.experimental.sparse._coo_csr import (  # noqa: F401
    CSC,
    CSR,
    csr_fromdense,
    csr_fromdense_p,
    csr_matmat,
    csr_matmat_p,
    csr_matvec,
    csr_matvec_p,
    csr_todense,
    csr_todense_p,
)
