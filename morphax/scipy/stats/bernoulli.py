"""The Bernoulli distribution: 1 with probability p."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import xlog1py, xlogy
from morphax.scipy.stats._common import promote


def logpmf(k, p, loc=0):
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    return jnp.where((x < 0) | (x > 1), -np.inf, xlogy(x, p) + xlog1py(1 - x, -p))


def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = promote("bernoulli.cdf", k, p)
    invalid = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
    return jnp.where(invalid, np.nan, jnp.where(k < 0, 0.0, jnp.where(k < 1, 1 - p, 1.0)))


def ppf(q, p):
    q, p = promote("bernoulli.ppf", q, p)
    invalid = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(invalid, np.nan, jnp.where(q <= 1 - p, 0.0, 1.0))
