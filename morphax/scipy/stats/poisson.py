"""The Poisson distribution with mean mu."""

import numpy as np

import morphax.numpy as jnp
from morphax.scipy.special import entr, gammaincc, gammaln, xlogy
from morphax.scipy.stats._common import promote


def logpmf(k, mu, loc=0):
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return jnp.where((x < 0) | (jnp.round(k) != k), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    x = k - loc
    return jnp.where(x < 0, 0.0, gammaincc(jnp.floor(1 + x), mu))


def _entropy_by_sum(mu, terms, upper):
    """-sum p log p over k < upper(mu), from a fixed number of terms (static under jit)."""
    k = jnp.arange(terms, dtype=mu.dtype)[:, None]
    probs = jnp.where(k < jnp.ceil(upper)[None, :], pmf(k, mu, 0), 0.0)
    return jnp.sum(entr(probs), axis=0)


def entropy(mu, loc=0):
    """The entropy in nats: a direct sum for mu < 100, the asymptotic expansion above."""
    mu, loc = promote("poisson.entropy", mu, loc)
    shape = jnp.broadcast_shapes(mu.shape, loc.shape)
    flat = jnp.ravel(mu)
    small = _entropy_by_sum(flat, 35, flat + 20)
    medium = _entropy_by_sum(flat, 250, flat + 10 * jnp.sqrt(flat) + 20)
    large = 0.5 * jnp.log(2 * np.pi * np.e * flat) - 1.0 / (12 * flat)
    result = jnp.where(flat == 0, 0.0, jnp.where(flat < 10, small, jnp.where(flat < 100, medium, large)))
    return jnp.broadcast_to(jnp.reshape(result, mu.shape), shape)
