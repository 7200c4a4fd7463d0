# ruff: noqa: F401
"""`morphax.experimental.sparse` (JAX's `jax.experimental.sparse`): sparse arrays (BCOO, BCSR and
the legacy COO/CSR/CSC), their primitives, `sparsify` and sparse-aware derivatives.

Modules: `bcoo` (the BCOO class and functions; primitives in `_bcoo_prims`, shape operations in
`_bcoo_ops`), `bcsr`, `coo`/`csr` (in `_coo_csr`), `api` (empty, eye, todense), `random`,
`transform` (sparsify), `ad` (derivatives), `linalg` (spsolve), `util`.
"""

from morphax.experimental.sparse import ad, api, bcoo, bcsr, coo, csr, linalg, random, transform, util
from morphax.experimental.sparse._base import JAXSparse
from morphax.experimental.sparse.ad import grad, jacfwd, jacobian, jacrev, value_and_grad
from morphax.experimental.sparse.api import empty, eye, todense, todense_p
from morphax.experimental.sparse.bcoo import (
    BCOO,
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_conv_general_dilated,
    bcoo_dot_general,
    bcoo_dot_general_p,
    bcoo_dot_general_sampled,
    bcoo_dot_general_sampled_p,
    bcoo_dynamic_slice,
    bcoo_extract,
    bcoo_extract_p,
    bcoo_fromdense,
    bcoo_fromdense_p,
    bcoo_gather,
    bcoo_multiply_dense,
    bcoo_multiply_sparse,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_sort_indices,
    bcoo_sort_indices_p,
    bcoo_spdot_general_p,
    bcoo_squeeze,
    bcoo_sum_duplicates,
    bcoo_sum_duplicates_p,
    bcoo_todense,
    bcoo_todense_p,
    bcoo_transpose,
    bcoo_transpose_p,
    bcoo_update_layout,
)
from morphax.experimental.sparse.bcsr import (
    BCSR,
    bcsr_broadcast_in_dim,
    bcsr_concatenate,
    bcsr_dot_general,
    bcsr_dot_general_p,
    bcsr_extract,
    bcsr_extract_p,
    bcsr_fromdense,
    bcsr_fromdense_p,
    bcsr_sum_duplicates,
    bcsr_todense,
    bcsr_todense_p,
)
from morphax.experimental.sparse.coo import (
    COO,
    coo_fromdense,
    coo_fromdense_p,
    coo_matmat,
    coo_matmat_p,
    coo_matvec,
    coo_matvec_p,
    coo_todense,
    coo_todense_p,
)
from morphax.experimental.sparse.csr import (
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
from morphax.experimental.sparse.random import random_bcoo
from morphax.experimental.sparse.transform import SparseTracer, sparsify
from morphax.experimental.sparse.util import (
    CuSparseEfficiencyWarning,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
)
