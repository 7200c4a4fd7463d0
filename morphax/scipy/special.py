"""`morphax.scipy.special`: special functions, mirroring ``jax.scipy.special``.

Written on morphax's public API (`morphax.numpy`, `morphax.lax`), so every function traces,
differentiates, vectorizes and compiles like any composition of primitives. Algorithms and edge
conventions are JAX's (which follow SciPy's): the gamma family from lax.lgamma/digamma/igamma,
betaln with SciPy's `algdiv` correction for large arguments, ndtri by Cephes' rational
approximations, log_ndtr with its asymptotic series in the far left tail, the Hurwitz zeta's
derivatives from Johansson's series expansion. Derivatives that the plain composition would get
wrong at the domain's edges (xlogy at x = 0, logit, log_ndtr in the tails) are custom JVPs, as
in JAX.
"""

from __future__ import annotations

import functools

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util
from morphax._src.numpy.reductions import logsumexp  # noqa: F401
from morphax.nn import log_softmax, softmax  # noqa: F401  (re-exported, as in JAX)
from morphax.numpy import logaddexp as _logaddexp  # noqa: F401

__all__ = [
    "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr", "erf", "erfc", "erfinv",
    "expit", "factorial", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e",
    "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
    "poch", "polygamma", "rel_entr", "softmax", "xlog1py", "xlogy", "zeta",
]  # fmt: skip


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
