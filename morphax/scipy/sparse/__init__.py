"""`morphax.scipy.sparse`: mirrors ``jax.scipy.sparse``, which holds the iterative solvers of
`linalg` (cg, gmres, bicgstab) for operators given as matrices or linear functions."""

from morphax.scipy.sparse import linalg  # noqa: F401
