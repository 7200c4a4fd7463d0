"""The left-skewed Gumbel distribution (minima): sf exp(-exp(z)). NB: -log(scale) rather than JAX's
xlogy(-1, scale) (equal for scale > 0), so the log density differentiates."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.log(scale) + (z - jnp.exp(z)), np.nan)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
    return jnp.where(scale > 0, jnp.log(-jnp.expm1(-jnp.exp((x - loc) / scale))), np.nan)


def cdf(x, loc=0, scale=1):
    return jnp.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    return jnp.where((p > 0) & (p < 1), loc + scale * jnp.log(-jnp.log1p(-p)), np.nan)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
    return jnp.where(scale > 0, -jnp.exp((x - loc) / scale), np.nan)


def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))
