"""`morphax.scipy.stats`: probability distributions (log densities, densities, distribution
functions and their inverses), mirroring ``jax.scipy.stats``: one module per distribution; and
`gaussian_kde`, kernel density estimation."""

from morphax.scipy.stats import (  # noqa: F401
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from morphax.scipy.stats.kde import gaussian_kde  # noqa: F401
