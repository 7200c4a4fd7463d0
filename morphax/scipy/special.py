"""`morphax.scipy.special`: special functions, mirroring ``jax.scipy.special`` (all 53 names).

Written on morphax's public API (`morphax.numpy`, `morphax.lax`), so every function traces,
differentiates, vectorizes and compiles like any composition of primitives. Algorithms and edge
conventions are JAX's (which follow SciPy's): betaln with SciPy's `algdiv` correction for large
arguments, ndtri by Cephes' rational approximations, log_ndtr with its asymptotic series in the
far left tail, the Hurwitz zeta's derivatives from Johansson's series expansion, Owen's T by
Patefield and Tandy's T5 quadrature, spence by Cephes. Derivatives that the plain composition
would get wrong at the domain's edges (xlogy at x = 0, logit, log_ndtr in the tails) are custom
JVPs, as in JAX. Families with longer algorithms live in private siblings re-exported here:
`_special_gamma` (the gamma family), `_special_faddeeva` (wofz, erfcx, dawsn),
`_special_exponential_integrals` (expn, exp1, expi), `_special_oscillatory_integrals` (sici,
fresnel), `_special_hypergeometric` (hyp1f1, hyp2f1), `_special_bessel` (bessel_jn) and
`_special_spherical_harmonics` (sph_harm_y).
"""

from __future__ import annotations

import fractions
import functools
import math
import operator

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy.reductions import logsumexp  # noqa: F401
from morphax.nn import log_softmax, softmax  # noqa: F401  (re-exported, as in JAX)
from morphax.numpy import logaddexp as _logaddexp  # noqa: F401
from morphax.scipy._special_bessel import bessel_jn  # noqa: F401
from morphax.scipy._special_exponential_integrals import exp1, expi, expn  # noqa: F401
from morphax.scipy._special_faddeeva import dawsn, erfcx, wofz  # noqa: F401
from morphax.scipy._special_gamma import (  # noqa: F401
    _const,
    _inexact,
    _real_only,
    comb,
    digamma,
    factorial,
    gamma,
    gammainc,
    gammaincc,
    gammaln,
    gammasgn,
    loggamma,
    multigammaln,
    poch,
    polygamma,
)
from morphax.scipy._special_hypergeometric import hyp1f1, hyp2f1  # noqa: F401
from morphax.scipy._special_oscillatory_integrals import fresnel, sici  # noqa: F401
from morphax.scipy._special_spherical_harmonics import sph_harm_y  # noqa: F401

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "dawsn", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit", "expn", "factorial", "fresnel", "gamma",
    "gammainc", "gammaincc", "gammaln", "gammasgn", "hyp1f1", "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div",
    "log_ndtr", "log_softmax", "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "owens_t",
    "poch", "polygamma", "rel_entr", "sici", "softmax", "spence", "sph_harm_y", "wofz", "xlog1py", "xlogy",
    "zeta",
]  # fmt: skip


# ------------------------------------------------------------------------------- beta family


def _algdiv(a, b):
    """log(Gamma(b) / Gamma(a + b)) for b >= 8 and a <= b (SciPy's cdflib `algdiv`)."""
    c0, c1, c2 = 0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03
    c3, c4, c5 = -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02
    h = a / b
    x = h / (1 + h)
    d = b + (a - 0.5)
    x2 = x * x
    s3 = 1.0 + (x + x2)
    s5 = 1.0 + (x + x2 * s3)
    s7 = 1.0 + (x + x2 * s5)
    s9 = 1.0 + (x + x2 * s7)
    s11 = 1.0 + (x + x2 * s9)
    t = (1.0 / b) ** 2
    w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
    w = w * (x / b)
    u = d * lax.log1p(a / b)
    v = a * (lax.log(b) - 1.0)
    return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """log|B(a, b)|, accurate also when one argument is large (SciPy's algorithm)."""
    a, b = _inexact("betaln", a, b)
    a, b = jnp.minimum(a, b), jnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _algdiv(a, b)
    return jnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)."""
    a, b = _inexact("beta", a, b)
    _real_only("beta", a)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    a, b, x = _inexact("betainc", a, b, x)
    _real_only("betainc", x)
    return lax.betainc(a, b, x)


# ----------------------------------------------------------------------- error function family


def erf(x):
    (x,) = _inexact("erf", x)
    return lax.erf(x)


def erfc(x):
    (x,) = _inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    (x,) = _inexact("erfinv", x)
    return lax.erf_inv(x)


erf.__doc__ = "The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt."
erfc.__doc__ = "The complementary error function 1 - erf(x), accurate for large x."
erfinv.__doc__ = "The inverse of erf on (-1, 1)."


def ndtr(x):
    """The standard normal CDF, from erf near 0 and erfc in the tails (no cancellation)."""
    x = jnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported types.")
    half_sqrt_2 = _const(x, 0.5 * np.sqrt(2.0))
    w = x * half_sqrt_2
    z = jnp.abs(w)
    y = jnp.where(z < half_sqrt_2, 1.0 + lax.erf(w), jnp.where(w > 0, 2.0 - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


# Cephes' ndtri: a rational approximation in w = p - 1/2 near the middle and in z = sqrt(-2 log p)
# (two ranges) in the tails.
_NDTRI_P0 = [-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0]  # fmt: skip
_NDTRI_Q0 = [1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0]  # fmt: skip
_NDTRI_P1 = [4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4]  # fmt: skip
_NDTRI_Q1 = [1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4]  # fmt: skip
_NDTRI_P2 = [3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9]  # fmt: skip
_NDTRI_Q2 = [1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9]  # fmt: skip


def ndtri(p):
    """The inverse of the standard normal CDF (-inf at 0, inf at 1, nan outside [0, 1])."""
    p = jnp.asarray(p)
    dtype = p.dtype
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={dtype} is not supported, see docstring for supported types.")
    coef = lambda c: np.array(c, dtype)  # noqa: E731
    complement = jnp.where(p > -np.expm1(-2.0), 1.0 - p, p)
    safe = jnp.where(complement == 0.0, _const(p, 0.5), complement)
    w = safe - 0.5
    ww = w * w
    x_big_p = (w + w * ww * (jnp.polyval(coef(_NDTRI_P0), ww) / jnp.polyval(coef(_NDTRI_Q0), ww))) * -np.sqrt(
        2.0 * np.pi
    )
    z = jnp.sqrt(-2.0 * jnp.log(safe))
    first = z - jnp.log(z) / z
    x_small_p = first - jnp.polyval(coef(_NDTRI_P2), 1 / z) / jnp.polyval(coef(_NDTRI_Q2), 1 / z) / z
    x_otherwise = first - jnp.polyval(coef(_NDTRI_P1), 1 / z) / jnp.polyval(coef(_NDTRI_Q1), 1 / z) / z
    x = jnp.where(safe > np.exp(-2.0), x_big_p, jnp.where(z >= 8.0, x_small_p, x_otherwise))
    x = jnp.where(p > 1.0 - np.exp(-2.0), x, -x)
    return jnp.where(p == 0.0, _const(p, -np.inf), jnp.where(p == 1.0, _const(p, np.inf), x))


_LOG_NDTR_LOWER = {np.dtype(np.float64): -20.0, np.dtype(np.float32): -10.0}
_LOG_NDTR_UPPER = {np.dtype(np.float64): 8.0, np.dtype(np.float32): 5.0}


def _norm_logpdf(x):
    return -0.5 * x * x - _const(x, np.log(np.sqrt(2 * np.pi)))


def _log_ndtr_lower(x, series_order):
    """log ndtr(x) for x << -1: the log of the Gaussian tail's asymptotic series."""
    x2 = x * x
    log_scale = -0.5 * x2 - jnp.log(-x) - _const(x, 0.5 * np.log(2.0 * np.pi))
    if series_order <= 0:
        return log_scale
    even, odd = jnp.zeros_like(x), jnp.zeros_like(x)
    x2n = x2
    for n in range(1, series_order + 1):
        term = _const(x, float(np.prod(np.arange(2 * n - 1, 1, -2)))) / x2n  # (2n-1)!! / x^2n
        if n % 2:
            odd = odd + term
        else:
            even = even + term
        x2n = x2n * x2
    return log_scale + jnp.log(1.0 + even - odd)


@functools.partial(morphax.custom_jvp, nondiff_argnums=(1,))
def log_ndtr(x, series_order=3):
    """log ndtr(x), accurate in both tails: -ndtr(-x) above 5 (float32; 8 in float64), the
    asymptotic series with `series_order` terms below -10 (-20), log(ndtr(x)) between."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    x = jnp.asarray(x)
    if x.dtype not in _LOG_NDTR_LOWER:
        raise TypeError(f"x.dtype={x.dtype} is not supported.")
    lower, upper = _LOG_NDTR_LOWER[x.dtype], _LOG_NDTR_UPPER[x.dtype]
    above = x > upper
    ndtr_value = ndtr(jnp.where(above, -x, jnp.maximum(x, lower)))
    middle = jnp.where(x > lower, jnp.log(ndtr_value), _log_ndtr_lower(jnp.minimum(x, lower), series_order))
    return jnp.where(above, -ndtr_value, middle)


@log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    (x,), (t,) = primals, tangents
    ans = log_ndtr(x, series_order=series_order)
    # d/dx log Phi(x) = phi(x) / Phi(x), formed in logs so the far tail does not overflow.
    return ans, t * jnp.exp(_norm_logpdf(x) - ans)


# Owen's T(h, a) = 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx by Patefield and
# Tandy's (2000) method T5, as JAX: 13-point Gauss quadrature in t = x^2 / a^2 (these nodes and
# weights carry the 1/(2 pi) and the Jacobian), used for |a| <= 1; |a| > 1 reduces to it through
# T(h, a) = (Phi(h) + Phi(ah))/2 - Phi(h) Phi(ah) - T(ah, 1/a) (for h >= 0) with exact values at
# h = 0 and a = 1. JAX skips the other 17 regions of the method on purpose: every branch of a
# select is evaluated anyway.
_OWENS_T_NODES = np.array([
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704,
])  # fmt: skip
_OWENS_T_WEIGHTS = np.array([
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239, 0.0038862217010742058,
    0.0016793031084546090,
])  # fmt: skip


def _owens_t_quadrature(h, a):
    """T(h, a) for 0 <= a <= 1 by the 13-point rule."""
    r = jnp.expand_dims(a * a, -1) * _OWENS_T_NODES.astype(a.dtype)
    integrand = jnp.exp(-0.5 * jnp.expand_dims(h * h, -1) * (1 + r)) / (1 + r)
    return a * jnp.sum(integrand * _OWENS_T_WEIGHTS.astype(a.dtype), -1)


@morphax.custom_jvp
def _owens_t(h, a):
    h, abs_a = jnp.abs(h), jnp.abs(a)
    root_2 = np.sqrt(2.0)
    small_a = abs_a <= 1
    reduced_a = jnp.where(small_a, abs_a, 1 / abs_a)
    reduced_h = jnp.where(small_a, h, abs_a * h)
    result = _owens_t_quadrature(reduced_h, reduced_a)
    result = jnp.where(reduced_h == 0, jnp.arctan(reduced_a) / (2 * np.pi), result)
    result = jnp.where(
        reduced_a == 1, 0.125 * lax.erfc(-reduced_h / root_2) * lax.erfc(reduced_h / root_2), result
    )
    # The reflection for |a| > 1, written with erf for small a h and with erfc otherwise, so that
    # neither cancels.
    erfc_h, erfc_ah = lax.erfc(h / root_2), lax.erfc(abs_a * h / root_2)
    small_ah = 0.25 - 0.25 * lax.erf(h / root_2) * lax.erf(abs_a * h / root_2) - result
    large_ah = 0.25 * (erfc_h + erfc_ah - erfc_h * erfc_ah) - result
    result = jnp.where(small_a, result, jnp.where(abs_a * h <= 0.67, small_ah, large_ah))
    result = jnp.sign(a) * result
    return jnp.where(jnp.isnan(a) | jnp.isnan(h), _const(result, np.nan), result)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (h_dot, a_dot) = primals, tangents
    # dT/dh = -phi(h) erf(a h / sqrt 2) / 2 and dT/da = exp(-(1 + a^2) h^2 / 2) / (2 pi (1 + a^2)).
    d_h = -jnp.exp(-0.5 * h * h) * lax.erf(a * h / np.sqrt(2.0)) / (2 * np.sqrt(2 * np.pi))
    d_a = jnp.exp(-0.5 * (1 + a * a) * h * h) / (2 * np.pi * (1 + a * a))
    return _owens_t(h, a), d_h * h_dot + d_a * a_dot


def owens_t(h, a):
    """Owen's T function, 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx."""
    h, a = _inexact("owens_t", h, a)
    _real_only("owens_t", h)
    h, a = jnp.broadcast_arrays(h, a)
    return _owens_t(h, a)


# ------------------------------------------------------------------- logits, entropies, logs


@morphax.custom_jvp
def logit(x):
    """log(x / (1 - x)), the inverse of expit."""
    (x,) = _inexact("logit", x)
    return jnp.log(x / (1 - x))


logit.defjvps(lambda g, ans, x: g / (x * (1 - x)))


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = _inexact("expit", x)
    return lax.logistic(x)


@morphax.custom_jvp
def xlogy(x, y):
    """x * log(y), defined as 0 where x == 0 (unless y is nan)."""
    x, y = _inexact("xlogy", x, y)
    return jnp.where((x != 0.0) | jnp.isnan(y), x * jnp.log(y), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlogy(x, y)
    return result, (x_dot * jnp.log(y) + y_dot * x / y).astype(result.dtype)


@morphax.custom_jvp
def xlog1py(x, y):
    """x * log1p(y), defined as 0 where x == 0 (unless y is nan)."""
    x, y = _inexact("xlog1py", x, y)
    return jnp.where((x != 0.0) | jnp.isnan(y), x * jnp.log1p(y), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlog1py(x, y)
    return result, (x_dot * jnp.log1p(y) + y_dot * x / (1 + y)).astype(result.dtype)


@morphax.custom_jvp
def _xlogx(x):
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (jnp.log(x) + 1)


def entr(x):
    """-x log x for x >= 0 (0 at 0), -inf for x < 0."""
    (x,) = _inexact("entr", x)
    _real_only("entr", x)
    return jnp.where(x < 0, _const(x, -np.inf), -_xlogx(x))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p == 0 and q >= 0; inf otherwise."""
    p, q = _inexact("rel_entr", p, q)
    _real_only("rel_entr", p)
    both_positive = (p > 0) & (q > 0)
    p_zero = (p == 0) & (q >= 0)
    safe_p, safe_q = jnp.where(both_positive, p, 1), jnp.where(both_positive, q, 1)
    value = _xlogx(safe_p) - xlogy(safe_p, safe_q)
    return jnp.where(both_positive, value, jnp.where(p_zero, _const(p, 0.0), _const(p, np.inf)))


def kl_div(p, q):
    """rel_entr(p, q) - p + q (SciPy's elementwise Kullback-Leibler term)."""
    p, q = _inexact("kl_div", p, q)
    _real_only("kl_div", p)
    return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
    """The Box-Cox transform (x**lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    zero = lmbda == 0
    safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    log_x = jnp.log(x)
    return jnp.where(zero, log_x, jnp.expm1(safe * log_x) / safe)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    zero = lmbda == 0
    safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    log1p_x = jnp.log1p(x)
    return jnp.where(zero, log1p_x, jnp.expm1(safe * log1p_x) / safe)


# -------------------------------------------------------------------------------- Bessel, zeta


def i0e(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    (x,) = _inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    (x,) = _inexact("i0", x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def i1e(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    (x,) = _inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    (x,) = _inexact("i1", x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


# 1 / B_{2j} * (2j)!, the Euler-Maclaurin coefficients of Johansson's zeta expansion.
_BERNOULLI_COEFS = [
    12, -720, 30240, -1209600, 47900160, -1307674368000 / 691, 74724249600, -10670622842880000 / 3617,
    5109094217170944000 / 43867, -802857662698291200000 / 174611, 14101100039391805440000 / 77683,
    -1693824136731743669452800000 / 236364091, 186134520519971831808000000 / 657931,
    -37893265687455865519472640000000 / 3392780147, 759790291646040068357842010112000000 / 1723168255201,
    -134196726836183700385281186201600000000 / 7709321041217,
]  # fmt: skip


def _zeta_series(s, a):
    """The Hurwitz zeta by Euler-Maclaurin summation (Johansson 2015, formula 5): N terms
    summed, the tail integrated, M Bernoulli corrections."""
    n = 8 if a.dtype == np.float32 else 16
    s_, a_ = jnp.expand_dims(s, -1), jnp.expand_dims(a, -1)
    k = np.arange(n, dtype=a.dtype)
    direct = jnp.sum((a_ + k) ** -s_, -1)
    integral = (a + n) ** (1 - s) / (s - 1)
    t0 = (a + n) ** -s
    m = np.arange(2 * n, dtype=a.dtype)
    ratios = jnp.cumprod((s_ + m) / (a_ + n), -1)[..., ::2]
    ratios = jnp.clip(ratios, max=float(np.finfo(a.dtype).max))
    corrections = ratios / np.array(_BERNOULLI_COEFS[: ratios.shape[-1]], dtype=a.dtype)
    return direct + integral + t0 * (0.5 + jnp.sum(corrections, -1))


@morphax.custom_jvp
def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q) ** -x (the Riemann zeta needs q, as in JAX)."""
    if q is None:
        raise NotImplementedError(
            "Riemann zeta function not implemented; pass q != None to compute the Hurwitz Zeta function."
        )
    x, q = _inexact("zeta", x, q)
    return lax.zeta(x, q)


@zeta.defjvp
def _zeta_jvp(primals, tangents):
    x, q = primals
    x, q = _inexact("zeta", x, q)
    x_dot, q_dot = tangents
    return zeta(x, q), morphax.jvp(_zeta_series, (x, q), (x_dot, q_dot))[1]


# ------------------------------------------------------------------ Bernoulli numbers, Spence


@functools.lru_cache(maxsize=64)
def _bernoulli_float64(n):
    """B_0 .. B_n (B_1 = -1/2) in float64: exactly, in rationals, by sum_{k<=m} C(m+1, k) B_k = 0
    up to where float64 overflows (|B_n| passes 1.8e308 near n = 260), +-inf beyond."""
    exact_up_to = min(n, 300)
    values = [fractions.Fraction(1), fractions.Fraction(-1, 2)][: exact_up_to + 1]
    for m in range(2, exact_up_to + 1):
        if m % 2:
            values.append(fractions.Fraction(0))
        else:
            values.append(-sum(math.comb(m + 1, k) * values[k] for k in range(m)) / (m + 1))
    out = np.zeros(n + 1)
    for m, value in enumerate(values):
        try:
            out[m] = float(value)
        except OverflowError:
            out[m] = np.inf if value > 0 else -np.inf
    even = np.arange(exact_up_to + 1, n + 1)
    even = even[even % 2 == 0]
    out[even] = np.where((even // 2) % 2 == 1, np.inf, -np.inf)  # B_2k has the sign (-1)^(k+1)
    return out


def bernoulli(n):
    """The Bernoulli numbers B_0 .. B_n (with B_1 = -1/2), in the default float dtype."""
    n = operator.index(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    dtype = _dtypes.default_float_dtype()
    values = _bernoulli_float64(n)
    if dtype != np.float64:
        # Overflow to +-inf explicitly rather than through a warning in the cast.
        big = np.abs(values) > np.finfo(dtype).max
        values = np.where(big, np.copysign(np.inf, values), values)
    # NB: JAX sums zeta(2k) only to 49 terms (B_4 off by 3e-6); these are correctly rounded.
    return jnp.asarray(values.astype(dtype))


# Cephes' spence.c: -w A(w) / B(w) around w = 0, highest degree first.
_SPENCE_A = [4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
             8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
             3.29771340985225106936e0, 1.00000000000000000126e0]  # fmt: skip
_SPENCE_B = [6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
             1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
             3.54771340985225096217e0, 9.99999999999999998740e-1]  # fmt: skip


def spence(x):
    """Spence's function integral_1^x log(t) / (1 - t) dt for real x >= 0 (nan below, as SciPy's
    real spence); differentiable by composition."""
    x = jnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported types.")
    # Every branch sees a stand-in value (1.0) where it is not used, so gradients stay finite.
    regular = (x > 0) & (x != 1)
    xs = jnp.where(regular, x, _const(x, 1.0))
    inverted = xs > 2
    xs = jnp.where(inverted, 1 / xs, xs)
    upper, lower = xs > 1.5, xs < 0.5
    inverted = inverted | upper
    w = jnp.where(upper, 1 / xs - 1, jnp.where(lower, -xs, xs - 1))
    y = -w * jnp.polyval(np.array(_SPENCE_A, x.dtype), w) / jnp.polyval(np.array(_SPENCE_B, x.dtype), w)
    one_minus = jnp.where(lower, 1 - xs, _const(x, 0.5))
    y = jnp.where(lower, np.pi**2 / 6 - jnp.log(xs) * jnp.log(one_minus) - y, y)
    y = jnp.where(inverted, -0.5 * jnp.log(xs) ** 2 - y, y)
    edge = jnp.where(x == 0, _const(x, np.pi**2 / 6), jnp.where(x == 1, _const(x, 0.0), _const(x, np.nan)))
    return jnp.where(regular & jnp.isfinite(x), y, edge)
