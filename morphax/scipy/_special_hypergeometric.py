"""The confluent and Gauss hypergeometric functions of `morphax.scipy.special`: hyp1f1 (1F1(a; b;
x) = sum_k (a)_k / ((b)_k k!) x^k) and hyp2f1 (2F1(a, b; c; x) = sum_k (a)_k (b)_k / ((c)_k k!)
x^k), for real arguments. Private: import from `morphax.scipy.special`.

The methods are JAX's, after Pearson, Olver and Porter (2014, arXiv:1407.7786): 1F1 by its
Taylor series for |x| < 100 and by its asymptotic expansion beyond; 2F1 by its Taylor series,
the terminating polynomial when a or b is a non-positive integer, Euler's transformation for
c - a - b <= -1, closed forms (x = 1, b = c, a = c), and near x = 1 with an integer c - a - b the
digamma expansions of Abramowitz & Stegun 15.3.10-12. Every series runs over the whole array in
one `lax.while_loop`, each element stopping where its next term falls below an epsilon of its
sum (at most 250 terms, as in JAX), so the functions trace, batch and compile. Derivatives are
custom JVPs: in x the closed form (a/b) 1F1(a+1; b+1; x) and (ab/c) 2F1(a+1, b+1; c+1; x), in the
parameters the Taylor series differentiated term by term (digamma differences), as in JAX (so
they hold where the Taylor series converges).
"""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.scipy._special_gamma import _const, _inexact, _real_only, gamma

_MAX_TERMS = 250


def _eps(x):
    return float(np.finfo(x.dtype).eps)


def _sum_series(total, term, ratio, weight=None, max_terms=_MAX_TERMS):
    """total + sum_{k>=1} weight(k) term_k, where term_1 = `term` and term_{k+1} = term_k
    ratio(k); each element stops once its next term is below an epsilon of its running sum."""
    eps = _eps(total)
    weight = weight or (lambda k: 1)

    def cond(state):
        k, _, _, done = state
        return (k < max_terms) & ~jnp.all(done)

    def body(state):
        k, total, term, done = state
        total = jnp.where(done, total, total + weight(k) * term)
        term = jnp.where(done, term, term * ratio(k))
        done = done | ~(jnp.abs(term) > eps * jnp.abs(total))
        return k + 1, total, term, done

    done = ~(jnp.abs(term) > eps * jnp.abs(total))
    return lax.while_loop(cond, body, (_const(total, 1.0), total, term, done))[1]


# ------------------------------------------------------------------------------------- 1F1


def _hyp1f1_taylor(a, b, x):
    return _sum_series(jnp.ones_like(x), a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1))


def _hyp1f1_asymptotic(a, b, x):
    """Gamma(b)/Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / (k! x^k), for large positive x."""
    series = _sum_series(
        jnp.ones_like(x), (b - a) * (1 - a) / x, lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x
    )
    return gamma(b) / gamma(a) * lax.exp(x) * x ** (a - b) * series


def _hyp1f1_value(a, b, x):
    near = jnp.abs(x) < 100
    one = _const(x, 1.0)
    taylor = _hyp1f1_taylor(a, b, jnp.where(near, x, one))
    asymptotic = _hyp1f1_asymptotic(a, b, jnp.where(near, _const(x, 100.0), x))
    value = jnp.where(near, taylor, asymptotic)
    # NB: 1F1(0; 0; x) is 1 here and in JAX (SciPy: inf).
    value = jnp.where((b == 0) & (a != 0), _const(x, np.inf), value)
    value = jnp.where((a == b) & (a != 0), lax.exp(x), value)
    return jnp.where(a == 0, one, value)


@morphax.custom_jvp
def _hyp1f1(a, b, x):
    return _hyp1f1_value(a, b, x)


def _hyp1f1_da(a, b, x):
    return _sum_series(
        jnp.zeros_like(x),
        a / b * x,
        lambda k: (a + k) / (b + k) * x / (k + 1),
        weight=lambda k: lax.digamma(a + k) - lax.digamma(a),
    )


def _hyp1f1_db(a, b, x):
    return _sum_series(
        jnp.zeros_like(x),
        a / b * x,
        lambda k: (a + k) / (b + k) * x / (k + 1),
        weight=lambda k: lax.digamma(b) - lax.digamma(b + k),
    )


_hyp1f1.defjvps(
    lambda a_dot, ans, a, b, x: _hyp1f1_da(a, b, x) * a_dot,
    lambda b_dot, ans, a, b, x: _hyp1f1_db(a, b, x) * b_dot,
    lambda x_dot, ans, a, b, x: a / b * _hyp1f1(a + 1, b + 1, x) * x_dot,
)


def hyp1f1(a, b, x):
    """The confluent hypergeometric function 1F1(a; b; x) of real arguments (1 at a = b = 0, as
    JAX). Large values are inaccurate in float32; use float64 there."""
    a, b, x = _inexact("hyp1f1", a, b, x)
    _real_only("hyp1f1", x)
    return _hyp1f1(*jnp.broadcast_arrays(a, b, x))


# ------------------------------------------------------------------------------------- 2F1


def _is_nonpositive_integer(v, tol):
    return (v <= 0) & (jnp.abs(v - jnp.round(v)) < tol)


def _hyp2f1_taylor(a, b, c, x):
    return _sum_series(jnp.ones_like(x), a * b / c * x, lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x)


def _hyp2f1_polynomial(a, b, c, x, use):
    """The terminating series, for a or b a non-positive integer (`use` marks those elements;
    the others get a zero-length sum). Of a and b, the one whose magnitude bounds the degree is
    the negative integer b when b < a, unless c is a non-positive integer between b and 0 (then
    the polynomial stops at a)."""
    tol = _eps(x) * 50
    c_blocks = (c % 1 == 0) & (c <= 0) & (c > b)
    swap = (b < a) & (jnp.abs(b - jnp.round(b)) < tol) & ~c_blocks
    a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
    # The loop runs i = 1, 2, ... while i < |a| + 1 (for a within tolerance of an integer too).
    degree = jnp.where(use, jnp.ceil(jnp.abs(a) + 1) - 1, 0.0)
    a = jnp.abs(a)
    safe_c = jnp.where(use, c, 1.0)

    def cond(state):
        i, _, _ = state
        return i <= jnp.max(degree)

    def body(state):
        i, total, term = state
        live = i <= degree
        next_term = term * -(a - i + 1) / (safe_c + i - 1) * (b + i - 1) / i * x
        return i + 1, jnp.where(live, total + next_term, total), jnp.where(live, next_term, term)

    ones = jnp.ones_like(x)
    return lax.while_loop(cond, body, (_const(x, 1.0), ones, ones))[1]


def _hyp2f1_near_one(a, b, c, x):
    """2F1 near x = 1 with c - a - b (nearly) an integer m: A&S 15.3.10-12 (Cephes' hys2f1
    digamma expansion). `e` = |m|, and the finite sum has |m| - 1 terms."""
    eps = _eps(x)
    d = c - a - b
    s = 1 - x
    rd = jnp.round(d)
    e = jnp.where(rd >= 0, d, -d)
    d1 = jnp.where(rd >= 0, d, 0.0)
    d2 = jnp.where(rd >= 0, 0.0, d)
    ard = jnp.abs(rd)
    log_s = jnp.log(s)
    psi = lax.digamma
    y = (psi(jnp.ones_like(x)) + psi(1 + e) - psi(a + d1) - psi(b + d1) - log_s) / gamma(e + 1)
    p = (a + d1) * (b + d1) * s / gamma(e + 2)

    def cond(state):
        t, _, q, y, done = state
        return (t < _MAX_TERMS) & ~jnp.all(done)

    def body(state):
        t, p, q, y, done = state
        r = psi(1 + t) + psi(1 + t + e) - psi(a + t + d1) - psi(b + t + d1) - log_s
        q = p * r
        y = jnp.where(done, y, y + q)
        p = jnp.where(done, p, p * s * (a + t + d1) / (t + 1) * (b + t + d1) / (t + 1 + e))
        done = done | ~(jnp.abs(q) >= eps * jnp.abs(y))
        return t + 1, p, q, y, done

    done = ~(jnp.abs(y) >= eps * jnp.abs(y))
    y = lax.while_loop(cond, body, (_const(x, 1.0), p, y, y, done))[3]

    def finite_sum(state):
        i, t, p, y1 = state
        live = i < ard
        p_next = p * s * (a + t + d2) * (b + t + d2) / (1 - e + t) / (t + 1)
        return i + 1, t + 1, jnp.where(live, p_next, p), jnp.where(live, y1 + p_next, y1)

    ones = jnp.ones_like(x)
    init = (_const(x, 1.0), jnp.zeros_like(x), ones, ones)
    y1 = lax.while_loop(lambda state: state[0] < jnp.max(ard), finite_sum, init)[3]
    gc = gamma(c)
    y1 = y1 * gamma(e) * gc / (gamma(a + d1) * gamma(b + d1))
    ym = y * gc / (gamma(a + d2) * gamma(b + d2))
    ym = jnp.where(ard % 2 == 1, -ym, ym)
    q = s**rd
    integer_case = jnp.where(rd > 0, ym * q + y1, ym + y1 * q)
    return jnp.where(rd == 0, y * gc / (gamma(a) * gamma(b)), integer_case)


def _hyp2f1_series(a, b, c, x):
    """2F1 inside the unit interval: the polynomial, the Taylor series, or (x > 0.9 with c - a - b
    an integer, where the series converges too slowly) the digamma expansion."""
    tol = _eps(x) * 50
    d = c - a - b
    terminating = _is_nonpositive_integer(a, tol) | _is_nonpositive_integer(b, tol)
    integer_d = jnp.abs(d - jnp.round(d)) < tol
    near_one = (x > 0.9) & ~terminating & integer_d
    one = _const(x, 1.0)
    half = _const(x, 0.5)
    plain = ~terminating & ~near_one
    # Stand-in arguments where a branch is not used keep its loop short and its values finite.
    taylor = _hyp2f1_taylor(
        jnp.where(plain, a, one),
        jnp.where(plain, b, one),
        jnp.where(plain, c, one),
        jnp.where(plain, x, half),
    )
    polynomial = _hyp2f1_polynomial(a, b, c, x, terminating)
    digamma_form = _hyp2f1_near_one(
        jnp.where(near_one, a, one),
        jnp.where(near_one, b, one),
        jnp.where(near_one, c, _const(x, 3.0)),
        jnp.where(near_one, x, half),
    )
    return jnp.where(terminating, polynomial, jnp.where(near_one, digamma_form, taylor))


def _hyp2f1_value(a, b, c, x):
    tol = _eps(x) * 50
    d, s, ca, cb = c - a - b, 1 - x, c - a, c - b
    inf, one = _const(x, np.inf), _const(x, 1.0)
    integer_d = jnp.abs(d - jnp.round(d)) < tol
    # Evaluate the Euler-transformed and the plain series only where each is used.
    euler = (d <= -1) & ~(~integer_d & (s < 0))
    euler_use = euler & (x < 1)
    plain_use = ~euler & (x < 1)
    xe = jnp.where(euler_use, x, 0.0)
    xp = jnp.where(plain_use, x, 0.0)
    euler_value = jnp.where(euler_use, s, one) ** d * _hyp2f1_series(ca, cb, c, xe)
    euler_value = jnp.where(x < 1, euler_value, inf)  # s^d with d <= -1 at x = 1; outside beyond
    plain_value = _hyp2f1_series(a, b, c, xp)
    s_pos = jnp.where(x < 1, s, one)
    at_one = gamma(c) * gamma(d) / (gamma(ca) * gamma(cb))
    # The cases in JAX's order of precedence (first match wins).
    cases = [
        ((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), one),
        ((c == 0) | ((c < 0) & (c % 1 == 0)), inf),
        (euler, euler_value),
        ((d <= 0) & (x == 1), inf),
        ((x < 1) & (b == c), s_pos ** (-a)),
        ((x < 1) & (a == c), s_pos ** (-b)),
        (x > 1, inf),
        (x == 1, at_one),
    ]
    value = plain_value
    for condition, case_value in reversed(cases):
        value = jnp.where(condition, case_value, value)
    return value


@morphax.custom_jvp
def _hyp2f1(a, b, c, x):
    return _hyp2f1_value(a, b, c, x)


def _hyp2f1_parameter_derivative(a, b, c, x, weight):
    return _sum_series(
        jnp.zeros_like(x), a * b / c * x, lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x, weight=weight
    )


_psi = lax.digamma
_hyp2f1.defjvps(
    lambda g, ans, a, b, c, x: g * _hyp2f1_parameter_derivative(a, b, c, x, lambda k: _psi(a + k) - _psi(a)),
    lambda g, ans, a, b, c, x: g * _hyp2f1_parameter_derivative(a, b, c, x, lambda k: _psi(b + k) - _psi(b)),
    lambda g, ans, a, b, c, x: g * _hyp2f1_parameter_derivative(a, b, c, x, lambda k: _psi(c) - _psi(c + k)),
    lambda g, ans, a, b, c, x: g * a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x),
)


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function 2F1(a, b; c; x) of real arguments, x <= 1 (inf beyond,
    and where c is a non-positive integer). Large values are inaccurate in float32."""
    a, b, c, x = _inexact("hyp2f1", a, b, c, x)
    _real_only("hyp2f1", x)
    return _hyp2f1(*jnp.broadcast_arrays(a, b, c, x))
