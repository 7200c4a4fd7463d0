"""The negative binomial distribution: failures before the n-th success."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import gammaln, xlogy
from morphax.scipy.stats._common import promote


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    return jnp.where(k < loc, -np.inf, comb + xlogy(n, p) + xlogy(y, 1 - p))


def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))
