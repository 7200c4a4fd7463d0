"""The von Mises distribution on the circle with concentration kappa."""

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax.scipy.stats._common import promote


def logpdf(x, kappa):
    x, kappa = promote("vonmises.logpdf", x, kappa)
    value = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return jnp.where(kappa > 0, value, np.nan)


def pdf(x, kappa):
    return jnp.exp(logpdf(x, kappa))
