"""The legacy COO format (JAX's `jax.experimental.sparse.coo`; implemented in _coo_csr.py)."""

from morphax.experimental.sparse._coo_csr import (  # noqa: F401
    COO,
    COOInfo,
    coo_fromdense,
    coo_fromdense_p,
    coo_matmat,
    coo_matmat_p,
    coo_matvec,
    coo_matvec_p,
    coo_todense,
    coo_todense_p,
)
