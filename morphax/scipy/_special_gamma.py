"""The gamma family of `morphax.scipy.special` (gammaln, gammasgn, gamma, loggamma, digamma,
polygamma, the regularized incomplete gammas, multigammaln, factorial, comb, poch) and the
argument promotion every special-function module shares. Private: import from
`morphax.scipy.special`."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util


def _inexact(name, *args):
    _util.check_arraylike(name, *args)
    return _util.promote_dtypes_inexact(*args)


def _real_only(name, x):
    if jnp.iscomplexobj(x):
        raise ValueError(f"{name} does not support complex-valued inputs.")


def _const(x, value):
    return jnp.asarray(value, dtype=jnp.result_type(x))


# ------------------------------------------------------------------------------ gamma family


def gammaln(x):
    """log|Gamma(x)|."""
    (x,) = _inexact("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x):
    """The sign of Gamma(x): nan at the poles (non-positive integers) and at nan, -1 where Gamma
    is negative (and at -0.0)."""
    (x,) = _inexact("gammasgn", x)
    _real_only("gammasgn", x)
    floor_x = lax.floor(x)
    negative = x < 0
    nan = (negative & (x == floor_x)) | jnp.isnan(x)
    minus = (negative & (floor_x % 2 != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.where(nan, _const(x, np.nan), jnp.where(minus, _const(x, -1.0), _const(x, 1.0)))


def gamma(x):
    """Gamma(x) for real x (sign times exp of log|Gamma|)."""
    (x,) = _inexact("gamma", x)
    _real_only("gamma", x)
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def loggamma(x):
    """The principal log of Gamma; for real x, log Gamma(x) where x > 0 and nan elsewhere."""
    (x,) = _inexact("loggamma", x)
    _real_only("loggamma", x)
    return jnp.where(x > 0, lax.lgamma(x), _const(x, np.nan))


def digamma(x):
    """psi(x) = d/dx log Gamma(x)."""
    (x,) = _inexact("digamma", x)
    return lax.digamma(x)


def polygamma(n, x):
    """The n-th derivative of digamma (n an integer array or scalar)."""
    if not _dtypes.issubdtype(_dtypes.dtype(n), np.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {_dtypes.dtype(n)}.")
    n, x = _inexact("polygamma", n, x)
    _real_only("polygamma", x)
    return lax.polygamma(n, x)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = _inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = _inexact("gammaincc", a, x)
    return lax.igammac(a, x)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension `d` (a Python int)."""
    d = int(d)
    a, d_ = _inexact("multigammaln", a, d)
    constant = 0.25 * d_ * (d_ - 1) * jnp.log(_const(a, np.pi))
    b = jnp.arange(d, dtype=d_.dtype) / 2
    return jnp.sum(gammaln(jnp.expand_dims(a, -1) - b), axis=-1) + constant


def factorial(n, exact=False):
    """n! = Gamma(n + 1) for real n (0 for negative n); exact=True is not supported (as in JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _inexact("factorial", n)
    return jnp.where(n < 0, _const(n, 0), lax.exp(lax.lgamma(n + 1)))


def comb(N, k, exact=False, repetition=False):  # noqa: N803 - SciPy's names
    """The number of combinations of N things taken k at a time (real arguments, via lgamma; with
    `repetition`, multisets)."""
    if exact:
        raise NotImplementedError("comb with exact=True")
    N, k = _inexact("comb", N, k)  # noqa: N806
    if repetition:
        return jnp.where((k == 0) & (N >= 0), _const(N, 1.0), comb(N + k - 1, k))
    valid = (k <= N) & (N >= 0) & (k >= 0)
    safe_n, safe_k = jnp.where(valid, N, 0.0), jnp.where(valid, k, 0.0)
    result = lax.exp(gammaln(safe_n + 1) - gammaln(safe_k + 1) - gammaln(safe_n + 1 - safe_k))
    return jnp.where(valid, result, _const(N, 0.0))


@morphax.custom_jvp
def poch(z, m):
    """The rising factorial (Pochhammer symbol) Gamma(z + m) / Gamma(z)."""
    z, m = _inexact("poch", z, m)
    _real_only("poch", z)
    return jnp.where(m == 0.0, _const(z, 1), gamma(z + m) / gamma(z))


poch.defjvps(
    lambda z_dot, ans, z, m: (digamma(z + m) - digamma(z)) * poch(z, m) * z_dot,
    lambda m_dot, ans, z, m: digamma(z + m) * poch(z, m) * m_dot,
)
