"""`morphax.random`: JAX's threefry PRNG (raw ``uint32[2]`` keys) and samplers, bit-compatible with
``jax.random``. Thin re-export of `morphax._src.random`."""

from morphax._src.random.distributions import (  # noqa: F401
    bernoulli,
    categorical,
    choice,
    exponential,
    gumbel,
    normal,
    permutation,
    rademacher,
    randint,
    truncated_normal,
    uniform,
)
from morphax._src.random.prng import PRNGKey, bits, clone, fold_in, key_data, split  # noqa: F401
