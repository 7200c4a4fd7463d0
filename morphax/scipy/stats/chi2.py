"""The chi-squared distribution with `df` degrees of freedom."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import gammainc, gammaincc, gammaln
from morphax.scipy.stats._common import promote


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half = df / 2
    kernel = (half - 1) * jnp.log(y) - y / 2
    constant = -(gammaln(half) + np.log(2.0) * df / 2)
    return jnp.where(x < loc, -np.inf, constant - jnp.log(scale) + kernel)


def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, jnp.clip((x - loc) / (scale * 2), 0, np.inf))


def logcdf(x, df, loc=0, scale=1):
    return jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, jnp.clip((x - loc) / (scale * 2), 0, np.inf))


def logsf(x, df, loc=0, scale=1):
    return jnp.log(sf(x, df, loc, scale))
