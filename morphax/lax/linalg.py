"""`morphax.lax.linalg`: the linear-algebra primitives' wrappers, mirroring ``jax.lax.linalg``."""

from morphax._src.prims.linalg import (  # noqa: F401
    EighImplementation,
    EigImplementation,
    SvdAlgorithm,
    cholesky,
    cholesky_p,
    eig,
    eig_p,
    eigh,
    eigh_p,
    lu,
    lu_p,
    lu_pivots_to_permutation,
    lu_pivots_to_permutation_p,
    qr,
    qr_p,
    svd,
    svd_p,
    triangular_solve,
    triangular_solve_p,
)
