"""The geometric distribution: the trial of the first success (k >= 1)."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import xlog1py
from morphax.scipy.stats._common import promote


def logpmf(k, p, loc=0):
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    return jnp.where(x <= 0, -np.inf, xlog1py(x - 1, -p) + jnp.log(p))


def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))
