"""The multinomial distribution: counts x (last axis) of n draws with probabilities p."""

import numpy as np

import morphax.numpy as jnp
from morphax._src.numpy import util as _util
from morphax.scipy.special import gammaln, xlogy
from morphax.scipy.stats._common import promote


def logpmf(x, n, p):
    (p,) = promote("multinomial.logpmf", p)
    _util.check_arraylike("multinomial.logpmf", x, n)
    x, n = jnp.asarray(x), jnp.asarray(n)
    if not (jnp.issubdtype(x.dtype, np.integer) and jnp.issubdtype(n.dtype, np.integer)):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return jnp.where(jnp.sum(x) == n, log_probs, -np.inf)


def pmf(x, n, p):
    return jnp.exp(logpmf(x, n, p))
