"""The multivariate normal distribution N(mean, cov) (a scalar cov means cov * I)."""

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax.scipy.stats._common import promote


def logpdf(x, mean, cov, allow_singular=None):
    """log N(x; mean, cov) over the last axis; cov is a scalar, or (..., n, n) positive definite
    (a Cholesky factor and one triangular solve per point)."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote("multivariate_normal.logpdf", x, mean, cov)
    if not mean.shape:
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (jnp.log(2 * np.pi) + jnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        return -0.5 * jnp.einsum("...i,...i->...", y, y) / cov - n / 2 * (jnp.log(2 * np.pi) + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    chol = lax.linalg.cholesky(cov)
    solve = jnp.vectorize(
        lambda c, v: lax.linalg.triangular_solve(c, v, left_side=False, lower=True, transpose_a=True),
        signature="(n,n),(n)->(n)",
    )
    z = solve(chol, y)
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-1, axis2=-2)), -1)
    return -0.5 * jnp.einsum("...i,...i->...", z, z) - n / 2 * np.log(2 * np.pi) - log_det


def pdf(x, mean, cov):
    return jnp.exp(logpdf(x, mean, cov))
