"""The exponential integrals of `morphax.scipy.special`: expn (E_n(x) = x^(n-1) integral_x^inf
exp(-t) / t^n dt for integer n >= 0), exp1 (E_1) and expi (Ei(x), the principal value of
integral_-inf^x exp(t) / t dt). Private: import from `morphax.scipy.special`.

The algorithms are Cephes' (expn.c and ei.c), as in JAX: E_n by its power series for x <= 1,
by its continued fraction for x > 1 and by the large-n asymptotic expansion for n >= 5000; Ei by
rational approximations on (0, 2] and on the octaves (2, 4], ..., (32, 64], (64, inf), and by
-E_1(-x) for x < 0. The iterations run over whole arrays in `lax.while_loop`s (until every
element has converged, with an iteration cap), so they trace, batch and compile; derivatives are
the closed forms dE_n/dx = -E_(n-1) and dEi/dx = exp(x)/x (custom JVPs, as in JAX).
"""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.scipy._special_gamma import _const, _inexact, _real_only

# Cephes stops a series or continued fraction at a relative change of one epsilon; these caps
# only bound the loop for inputs where that never happens (they are far above what converging
# inputs need: ~20 series terms for x <= 1, at most a few hundred fraction steps for x > 1).
_SERIES_CAP = 200
_FRACTION_CAP = 2000
_BIG = 1.44115188075855872e17  # Cephes' rescaling threshold for the fraction's numerators


def _eps(x):
    return float(np.finfo(x.dtype).eps)


def _expn_series(n, x):
    """E_n(x) for 0 < x <= 1 and integer n >= 1: the power series of Abramowitz & Stegun 5.1.12,
    (-x)^(n-1) / (n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)."""
    one = _const(x, 1.0)
    # sum_{k=1}^{n-1} 1/k - gamma - log x; the harmonic sum is digamma(n) + gamma.
    psi = lax.digamma(n) - jnp.log(x)
    first = jnp.where(n == 1, _const(x, 0.0), one / (one - jnp.where(n == 1, _const(x, 2.0), n)))

    def cond(state):
        k, _, _, _, t = state
        return (k < _SERIES_CAP) & jnp.any(t > _eps(x))

    def body(state):
        k, power, pk, total, _ = state
        power = power * -x / (k + 1)  # (-x)^(k+1) / (k+1)!
        pk = pk + 1  # k + 1 - (n - 1)
        total = total + jnp.where(pk != 0, power / jnp.where(pk != 0, pk, one), 0.0)
        t = jnp.where(total != 0, jnp.abs(power / total), 0.0)
        return k + 1, power, pk, total, t

    init = (_const(x, 0.0), jnp.ones_like(x), one - n, first, jnp.full_like(x, np.inf))
    total = lax.while_loop(cond, body, init)[3]
    return (-x) ** (n - 1) * psi / lax.exp(lax.lgamma(n)) - total


def _expn_fraction(n, x):
    """E_n(x) for x > 1: the continued fraction exp(-x) (1/(x+ n/(1+ 1/(x+ (n+1)/(1+ 2/(x+ ...)))))),
    evaluated forwards by its numerator and denominator recurrences, rescaled when they grow."""
    one = _const(x, 1.0)

    def cond(state):
        k, *_, t = state
        return (k < _FRACTION_CAP) & jnp.any(t > _eps(x))

    def body(state):
        k, pkm2, qkm2, pkm1, qkm1, ans, _ = state
        k = k + 1
        odd = (k % 2) == 1
        yk = jnp.where(odd, one, x)
        xk = jnp.where(odd, n + (k - 1) / 2, k / 2)
        pk = pkm1 * yk + pkm2 * xk
        qk = qkm1 * yk + qkm2 * xk
        nonzero = qk != 0
        r = pk / jnp.where(nonzero, qk, one)
        t = jnp.where(nonzero, jnp.abs((ans - r) / r), one)
        ans = jnp.where(nonzero, r, ans)
        scale = jnp.where(jnp.abs(pk) > _BIG, _const(x, 1 / _BIG), one)
        return k, pkm1 * scale, qkm1 * scale, pk * scale, qk * scale, ans, t

    ones = jnp.ones_like(x)
    init = (_const(x, 1.0), ones, x, ones, x + n, 1 / (x + n), jnp.full_like(x, np.inf))
    return lax.while_loop(cond, body, init)[5] * lax.exp(-x)


def _expn_large_n(n, x):
    """E_n(x) for n >= 5000: the uniform asymptotic expansion in 1/(x + n)^2 (A&S 5.1.52)."""
    xk = x + n
    yk = 1 / (xk * xk)
    ans = yk * n * (6 * x * x - 8 * n * x + n * n)
    ans = yk * (ans + n * (n - 2 * x))
    ans = yk * (ans + n)
    return (ans + 1) * lax.exp(-x) / xk


def _expn_value(n, x):
    one = _const(x, 1.0)
    integer = n == jnp.floor(n)
    nan = (n < 0) | (x < 0) | ~integer | jnp.isnan(x) | jnp.isnan(n)
    zero_x = x == 0
    large_n = n >= 5000
    use_fraction = (x > 1) & ~large_n
    use_series = (x > 0) & (x <= 1) & ~large_n & (n >= 1)
    # Each branch sees a harmless stand-in outside its own domain (and at x = inf).
    finite = jnp.isfinite(x)
    series = _expn_series(jnp.where(use_series, n, one), jnp.where(use_series, x, 0.5))
    fraction = _expn_fraction(jnp.where(use_fraction, n, one), jnp.where(use_fraction & finite, x, 2.0))
    asymptotic = _expn_large_n(n, jnp.where(large_n & finite, x, one))
    safe_x = jnp.where(zero_x | ~finite, one, x)
    value = jnp.where(
        n == 0,
        lax.exp(-safe_x) / safe_x,
        jnp.where(large_n, asymptotic, jnp.where(use_fraction, fraction, series)),
    )
    # E_n(inf) = 0; E_n(0) = inf for n <= 1 and 1/(n - 1) beyond.
    # NB: JAX returns 1/n at x = 0 for n >= 2 (and nan at x = inf, and hangs on some batches that
    # hold inf); the value here is the integral's, as SciPy's.
    at_zero = jnp.where(n <= 1, _const(x, np.inf), one / jnp.where(n <= 1, one, n - 1))
    value = jnp.where(zero_x, at_zero, jnp.where(x == np.inf, _const(x, 0.0), value))
    # NB: for a non-integer n SciPy truncates n (with a warning); JAX and morphax return nan.
    return jnp.where(nan, _const(x, np.nan), value)


# NB: JAX makes n a non-differentiable argument (nondiff_argnums); here it is an ordinary one whose
# tangent is dropped (E_n is defined for integer n only), which also lets vmap batch over n.
@morphax.custom_jvp
def _expn(n, x):
    return _expn_value(n, x)


def _expn_x_tangent(x_dot, ans, n, x):
    # dE_n/dx = -E_(n-1) for n >= 1, and E_0 = exp(-x)/x has E_0' = -(1 + 1/x) E_0.
    # NB: JAX uses -E_(n-1) for n = 0 too, so its second derivative of exp1 is nan.
    lower = _expn(jnp.maximum(n - 1, 0), x)
    return -x_dot * jnp.where(n == 0, (1 + 1 / x) * lower, lower)


_expn.defjvps(lambda n_dot, ans, n, x: jnp.zeros_like(ans), _expn_x_tangent)


def expn(n, x):
    """The generalized exponential integral E_n(x) for integer n >= 0 and x >= 0 (nan outside);
    differentiable in x."""
    n, x = _inexact("expn", n, x)
    _real_only("expn", x)
    n, x = jnp.broadcast_arrays(n, x)
    return _expn(n, x)


def exp1(x):
    """The exponential integral E_1(x) = integral_x^inf exp(-t) / t dt for x >= 0 (nan below)."""
    (x,) = _inexact("exp1", x)
    _real_only("exp1", x)
    return expn(jnp.ones_like(x), x)


# Cephes' ei.c: Ei(x) = gamma + log x + x A(x) / B(x) on (0, 2], and exp(x)/x (1 + w A(w) / B(w))
# with w = 1/x on each octave above; highest degree first.
_EI_PIECES = [
    ([-5.350447357812542947283e0, 2.185049168816613393830e2, -4.176572384826693777058e3,
      5.541176756393557601232e4, -3.313381331178144034309e5, 1.592627163384945414220e6],
     [1.0, -5.250547959112862969197e1, 1.259616186786790571525e3, -1.756549581973534652631e4,
      1.493062117002725991967e5, -7.294949239640527645655e5, 1.592627163384945429726e6]),
    ([1.981808503259689673238e-2, -1.271645625984917501326e0, -2.088160335681228318920e0,
      2.755544509187936721172e0, -4.409507048701600257171e-1, 4.665623805935891391017e-2,
      -1.545042679673485262580e-3, 7.059980605299617478514e-5],
     [1.0, 1.476498670914921440652e0, 5.629177174822436244827e-1, 1.699017897879307263248e-1,
      2.291647179034212017463e-2, 4.450150439728752875043e-3, 1.727439612206521482874e-4,
      3.953167195549672482304e-5]),
    ([-1.373215375871208729803e0, -7.084559133740838761406e-1, 1.580806855547941010501e0,
      -2.601500427425622944234e-1, 2.994674694113713763365e-2, -1.038086040188744005513e-3,
      4.371064420753005429514e-5, 2.141783679522602903795e-6],
     [1.0, 8.585231423622028380768e-1, 4.483285822873995129957e-1, 7.687932158124475434091e-2,
      2.449868241021887685904e-2, 8.832165941927796567926e-4, 4.590952299511353531215e-4,
      -4.729848351866523044863e-6, 2.665195537390710170105e-6]),
    ([-2.106934601691916512584e0, 1.732733869664688041885e0, -2.423619178935841904839e-1,
      2.322724180937565842585e-2, 2.372880440493179832059e-4, -8.343219561192552752335e-5,
      1.363408795605250394881e-5, -3.655412321999253963714e-7, 1.464941733975961318456e-8,
      6.176407863710360207074e-10],
     [1.0, -2.298062239901678075778e-1, 1.105077041474037862347e-1, -1.566542966630792353556e-2,
      2.761106850817352773874e-3, -2.089148012284048449115e-4, 1.708528938807675304186e-5,
      -4.459311796356686423199e-7, 1.394634930353847498145e-8, 6.150865933977338354138e-10]),
    ([-2.458119367674020323359e-1, -1.483382253322077687183e-1, 7.248291795735551591813e-2,
      -1.348315687380940523823e-2, 1.342775069788636972294e-3, -7.942465637159712264564e-5,
      2.644179518984235952241e-6, -4.239473659313765177195e-8],
     [1.0, -1.044225908443871106315e-1, -2.676453128101402655055e-1, 9.695000254621984627876e-2,
      -1.601745692712991078208e-2, 1.496414899205908021882e-3, -8.462452563778485013756e-5,
      2.728938403476726394024e-6, -4.239462431819542051337e-8]),
    ([1.212561118105456670844e-1, -5.823133179043894485122e-1, 2.348887314557016779211e-1,
      -3.040034318113248237280e-2, 1.510082146865190661777e-3, -2.523137095499571377122e-5],
     [1.0, -1.002252150365854016662e0, 2.928709694872224144953e-1, -3.337004338674007801307e-2,
      1.560544881127388842819e-3, -2.523137093603234562648e-5]),
    ([-7.657847078286127362028e-1, 6.886192415566705051750e-1, -2.132598113545206124553e-1,
      3.346107552384193813594e-2, -3.076541477344756050249e-3, 1.747119316454907477380e-4,
      -6.103711682274170530369e-6, 1.218032765428652199087e-7, -1.086076102793290233007e-9],
     [1.0, -1.888802868662308731041e0, 1.066691687211408896850e0, -2.751915982306380647738e-1,
      3.930852688233823569726e-2, -3.414684558602365085394e-3, 1.866844370703555398195e-4,
      -6.345146083130515357861e-6, 1.239754287483206878024e-7, -1.086076102793126632978e-9]),
]  # fmt: skip
# The upper ends of the pieces: (0, 2], (2, 4], (4, 8], ..., (32, 64], (64, inf).
_EI_EDGES = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]


def _ei_positive(x):
    """Ei(x) for x > 0, piece by piece; each piece is evaluated at its own midpoint outside it."""
    coef = lambda c: np.array(c, x.dtype)  # noqa: E731
    lower = [0.0] + _EI_EDGES
    upper = _EI_EDGES + [np.inf]
    result = jnp.zeros_like(x)
    for i, ((a, b), lo, hi) in enumerate(zip(_EI_PIECES, lower, upper)):
        inside = (x > lo) & (x <= hi)
        xs = jnp.where(inside, x, _const(x, 1.0 if i == 0 else 1.5 * lo))
        if i == 0:
            value = np.euler_gamma + jnp.log(xs) + xs * jnp.polyval(coef(a), xs) / jnp.polyval(coef(b), xs)
        else:
            w = 1 / xs
            value = lax.exp(xs) * w * (1 + w * jnp.polyval(coef(a), w) / jnp.polyval(coef(b), w))
        result = jnp.where(inside, value, result)
    return result


@morphax.custom_jvp
def _expi(x):
    negative = x < 0
    positive = _ei_positive(jnp.where(negative | (x == np.inf), _const(x, 1.0), x))
    negative_value = -_expn_value(jnp.ones_like(x), jnp.where(negative, -x, _const(x, 1.0)))
    value = jnp.where(negative, negative_value, positive)
    # NB: JAX returns nan at 0 and at +-inf; these are the limits (SciPy's values).
    value = jnp.where(x == 0, _const(x, -np.inf), value)
    value = jnp.where(x == np.inf, _const(x, np.inf), jnp.where(x == -np.inf, _const(x, 0.0), value))
    return jnp.where(jnp.isnan(x), x, value)


_expi.defjvps(lambda g, ans, x: g * lax.exp(x) / x)


def expi(x):
    """The exponential integral Ei(x) (real x; -inf at 0)."""
    (x,) = _inexact("expi", x)
    _real_only("expi", x)
    return _expi(x)
