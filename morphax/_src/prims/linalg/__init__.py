"""The linear-algebra primitives of `jax.lax.linalg`, one module per primitive with all its rules
(declaration, shape and dtype checks, LAPACK reference, batching, derivatives, test cases):
cholesky, triangular_solve, lu (and lu_pivots_to_permutation), qr, eigh, svd and eig; the
condensed forms (hessenberg, tridiagonal), Householder products (householder_product, ormqr),
rank updates (cholesky_update, symmetric_product), schur and tridiagonal_solve. What they
share -- operand checks, reference loops and the lax matrix operations the derivative rules are
written with -- is in matrix_ops."""

from morphax._src.prims.linalg.cholesky import *  # noqa: F401,F403
from morphax._src.prims.linalg.condensed_forms import *  # noqa: F401,F403
from morphax._src.prims.linalg.eig import *  # noqa: F401,F403
from morphax._src.prims.linalg.eigh import *  # noqa: F401,F403
from morphax._src.prims.linalg.householder import *  # noqa: F401,F403
from morphax._src.prims.linalg.lu import *  # noqa: F401,F403
from morphax._src.prims.linalg.matrix_ops import symmetrize  # noqa: F401
from morphax._src.prims.linalg.qr import *  # noqa: F401,F403
from morphax._src.prims.linalg.rank_updates import *  # noqa: F401,F403
from morphax._src.prims.linalg.schur import *  # noqa: F401,F403
from morphax._src.prims.linalg.svd import *  # noqa: F401,F403
from morphax._src.prims.linalg.triangular_solve import *  # noqa: F401,F403
from morphax._src.prims.linalg.tridiagonal_solve import *  # noqa: F401,F403
