"""The normal distribution truncated to [a, b] (in standard units: loc + scale * [a, b]).

The normalizing mass is formed in logs, by whichever tail formula avoids cancellation (SciPy's
and JAX's `_log_gauss_mass`), so far tails keep their precision.
"""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import log_ndtr, logsumexp, ndtr
from morphax.scipy.stats import norm
from morphax.scipy.stats._common import promote


def _log_diff(x, y):
    """log(exp(x) - exp(y)) for x >= y."""
    return logsumexp(jnp.array([x, y]), b=jnp.array([jnp.ones_like(x), -jnp.ones_like(y)]), axis=0)


def _log_gauss_mass(a, b):
    """log(Phi(b) - Phi(a)): by the left tail when b <= 0, the right tail (mirrored) when a > 0,
    and 1 - Phi(a) - Phi(-b) otherwise."""
    a, b = jnp.broadcast_arrays(jnp.asarray(a), jnp.asarray(b))
    left, right = b <= 0, a > 0
    a_tail = jnp.where(right, -b, a)
    b_tail = jnp.where(right, -a, b)
    tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    central = jnp.log1p(-ndtr(a) - ndtr(-b))
    return jnp.where(left | right, tail, central)


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    value = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    value = jnp.where((z < a) | (z > b), -np.inf, value)
    return jnp.where(a >= b, np.nan, value)


def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = jnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    total = _log_gauss_mass(a, b)
    log_cdf = _log_gauss_mass(a, z) - total
    log_sf = _log_gauss_mass(z, b) - total
    # Near 1 the complement is the accurate one.
    value = jnp.where(log_cdf > -0.1, jnp.log1p(-jnp.exp(log_sf)), log_cdf)
    value = jnp.where(z <= a, -np.inf, value)
    value = jnp.where(z >= b, 0.0, value)
    return jnp.where(a >= b, np.nan, value)


def cdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    return jnp.exp(logsf(x, a, b, loc, scale))
