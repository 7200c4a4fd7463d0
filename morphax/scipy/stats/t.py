"""Student's t distribution with `df` degrees of freedom."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import gammaln
from morphax.scipy.stats._common import promote


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half = df / 2
    normalizer = gammaln(half) + jnp.log(scale * scale * np.pi * df) / 2 - gammaln(half + 0.5)
    return -(normalizer + (half + 0.5) * jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))
