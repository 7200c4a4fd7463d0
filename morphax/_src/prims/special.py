"""lax's special functions: exponentially scaled Bessel functions `bessel_i0e`/`bessel_i1e`, the
regularized incomplete gamma functions `igamma`/`igammac` with their parameter derivatives
`igamma_grad_a` and `random_gamma_grad`, the regularized incomplete beta function `betainc` and the
Hurwitz zeta function `zeta`. Floating dtypes only; references run in float64 and round once.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import aval_of
from morphax._src.core.avals import ShapedArray
from morphax._src.core.lazy_import import LazyModule
from morphax._src.core.primitive import Primitive
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims import _stablehlo_special as hlo_special
from morphax._src.prims._ad import defjvp
from morphax._src.prims._operands import lax_binary_operands, lax_nary_operands
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, binary_cases, random_array
from morphax._src.prims.arithmetic import abs as _abs
from morphax._src.prims.arithmetic import add, div, mul, sub
from morphax._src.prims.builders import (
    as_arrays,
    binary_elementwise,
    broadcasting_shape,
    check_dtype,
    elementwise_primitive,
    elementwise_unop,
    same_dtypes,
)
from morphax._src.prims.compare import gt
from morphax._src.prims.conversion import full_like
from morphax._src.prims.selection import select
from morphax._src.prims.transcendental import digamma, exp, lgamma, log, log1p
from morphax._src.prims.unary import neg, sign

_sp = LazyModule("scipy.special")  # imported at first use, so `import morphax` stays fast

__all__ = [
    "bessel_i0e",
    "bessel_i0e_p",
    "bessel_i1e",
    "bessel_i1e_p",
    "betainc",
    "igamma",
    "igamma_grad_a",
    "igamma_grad_a_p",
    "igamma_p",
    "igammac",
    "igammac_p",
    "random_gamma_grad",
    "random_gamma_grad_p",
    "regularized_incomplete_beta_p",
    "zeta",
    "zeta_p",
]


def _in_float64(fn):
    """Evaluate `fn` on float64 copies of the operands and round the result once to their dtype
    (float32 results are then correctly rounded up to SciPy's own float64 error)."""

    def impl(*args):
        args = as_arrays(*args)
        dtype = args[0].dtype
        with np.errstate(all="ignore"):
            out = fn(*[a.astype(np.float64) for a in args])
        return np.asarray(out).astype(dtype)

    return impl


# ---------------------------------------------------------------------------------------------
# Exponentially scaled modified Bessel functions of orders 0 and 1.

_BESSEL_SPECIALS = (0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 50.0, -50.0, 1e6, -1e6, np.inf, -np.inf, np.nan)


def _signed_unary_cases(rng):
    """Random operands of both signs kept away from 0, where i0e has a kink (the derivative matrix
    perturbs them), plus the special values."""
    out = []
    for dt in ("float32", "float16", "bfloat16"):
        for shape in ((), (3,), (2, 3), (0,), (1, 4)):
            mag = random_array(rng, shape, "float64", (0.2, 6.0))
            signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
            out.append(Case(((mag * signs).astype(dt),), {}, f"{dt}{list(shape)}"))
        out.append(Case((np.array(_BESSEL_SPECIALS).astype(dt),), {}, f"{dt}-specials"))
    return out


bessel_i0e_p = elementwise_unop(
    "bessel_i0e", _in_float64(_sp.deferred("i0e")), "float", spec=TestSpec(cases=_signed_unary_cases)
)
bessel_i1e_p = elementwise_unop(
    "bessel_i1e", _in_float64(_sp.deferred("i1e")), "float", spec=TestSpec(cases=_signed_unary_cases)
)
bessel_i0e_p.stablehlo = hlo_special.bessel_i0e
bessel_i1e_p.stablehlo = hlo.elementwise("chlo.bessel_i1e")


def _i1e_derivative(ans, x):
    # i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), whose limit at 0 is 1/2; below eps the formula
    # would divide by (almost) zero, so it is evaluated at a safe point and replaced.
    eps = float(_dtypes.finfo(aval_of(x).dtype).eps)
    not_tiny = gt(_abs(x), eps)
    safe_x = select(not_tiny, x, full_like(x, eps))
    dy = sub(bessel_i0e(safe_x), mul(ans, add(sign(safe_x), div(1.0, safe_x))))
    return select(not_tiny, dy, full_like(x, 0.5))


defjvp(bessel_i0e_p, lambda g, ans, x: mul(g, sub(bessel_i1e(x), mul(sign(x), ans))))
defjvp(bessel_i1e_p, lambda g, ans, x: mul(g, _i1e_derivative(ans, x)))


def bessel_i0e(x):
    """Elementwise ``exp(-|x|) * I0(x)``, the exponentially scaled modified Bessel function of
    order 0."""
    return bessel_i0e_p.bind(x)


def bessel_i1e(x):
    """Elementwise ``exp(-|x|) * I1(x)``, the exponentially scaled modified Bessel function of
    order 1."""
    return bessel_i1e_p.bind(x)


# ---------------------------------------------------------------------------------------------
# Regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 - P(a, x).


def _gammainc_like(fn):
    def ref(a, x):
        # a = +inf: XLA gives the limit (P = 0, Q = 1) for x < 1 and at x = inf (P = 1, Q = 0),
        # nan for 1 <= x < inf; SciPy gives the limits throughout (and nan at x = inf).
        a_inf = a == np.inf
        a = np.where(a_inf & (x == np.inf), 1.0, a)
        return np.where(a_inf & (x >= 1) & (x < np.inf), np.nan, fn(a, x))

    return ref


# The series needs about 10 sqrt(a) terms near x = a: this cap keeps it exact to a ~ 1e10 (past
# it the partial sum is returned). The continued fraction, used from x = a + sqrt(a) on, converges
# in a few hundred steps whatever a is.
_MAX_TERMS = 1 << 20
_MAX_ITERS = 100_000
_CHUNK = 64
_EPS64 = np.finfo(np.float64).eps


def _log1pmx(t):
    """log(1 + t) - t, by its Taylor series where the difference would cancel."""
    small = np.abs(t) < 0.25
    ts = np.where(small, t, 0.0)
    acc = np.zeros_like(ts)
    for k in range(30, 1, -1):
        acc = ts * ((-1.0) ** (k + 1) / k + acc)
    return np.where(small, ts * acc, np.log1p(t) - t)


_STIRLING_A = 10.0


def _log_ax_and_dlog(a, x):
    """log(x^a e^-x / Gamma(a)) and log(x) - digamma(a). For large a each is a small difference of
    large terms (~a log a and ~log a), so there they come from Stirling's and the digamma
    asymptotic series around log(a), with t = x/a - 1 carried exactly: the relative error then
    stays near eps instead of growing like eps * a."""
    big = a >= _STIRLING_A
    ab = np.where(big, a, _STIRLING_A)
    t = (x - ab) / ab
    inv2 = 1.0 / (ab * ab)
    # lgamma(a) = (a - 1/2) log a - a + log(2 pi)/2 + (1/12 - (1/360 - (1/1260 - ...)/a^2)/a^2)/a.
    stirling = (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 / 1188)))) / ab
    log_ax_big = ab * _log1pmx(t) + 0.5 * np.log(ab / (2 * np.pi)) - stirling
    # digamma(a) - log(a) = -1/(2a) - 1/(12a^2) + 1/(120a^4) - 1/(252a^6) + 1/(240a^8) - 1/(132a^10).
    psi_minus_log = -0.5 / ab - inv2 * (
        1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132)))
    )
    dlog_big = np.log1p(t) - psi_minus_log
    log_ax = np.where(big, log_ax_big, a * np.log(x) - x - _sp.gammaln(a))
    dlog = np.where(big, dlog_big, np.log(x) - _sp.psi(a))
    return log_ax, dlog


def _series_da(a, x, dlog):
    """sum_n u_n d_n, where P(a, x) = ax * sum_n u_n with ax = x^a e^-x / Gamma(a),
    u_0 = 1/a, u_{n+1} = u_n x / (a + n + 1), and d_n = log x - digamma(a + n + 1) is the
    a-derivative of log u_n: so dP/da = ax * sum_n u_n d_n. Converges for every x > 0 and is used
    where x <= max(1, a + sqrt(a)) (its terms shrink from the start or from n = x - a on). Terms
    are made _CHUNK at a time (running products and sums along a second axis), as large a needs
    O(sqrt(a)) of them."""
    u = 1.0 / a
    d = dlog - 1.0 / a  # log x - digamma(a + 1)
    s = u * d
    live = np.arange(a.size)
    steps = np.arange(1.0, _CHUNK + 1.0)
    n = 0
    while live.size and n < _MAX_TERMS:
        an = a[live, None] + (n + steps)
        us = u[live, None] * np.cumprod(x[live, None] / an, axis=1)
        ds = d[live, None] - np.cumsum(1.0 / an, axis=1)
        s[live] += np.sum(us * ds, axis=1)
        u[live], d[live] = us[:, -1], ds[:, -1]
        # The tail is at most the next term over (1 - ratio): stop once that is below rounding.
        ratio = np.minimum(x[live] / an[:, -1], 1.0)
        tail = np.abs(u[live]) * (np.abs(d[live]) + 1.0)
        done = (tail <= 0.5 * _EPS64 * np.abs(s[live]) * (1.0 - ratio)) | (u[live] == 0)
        done |= ~np.isfinite(s[live])
        live = live[~done]
        n += _CHUNK
    return s


def _cf_da(a, x, log_x_minus_psi):
    """Legendre's continued fraction Gamma(a, x) e^x x^-a = 1/(x+1-a - 1(1-a)/(x+3-a - 2(2-a)/...))
    (partial numerators -(k-1)(k-1-a), denominators x+2k-1-a) evaluated by the forward
    recurrence of its convergents A_k/B_k, carrying their a-derivatives alongside. Returns the
    fraction F and dF/da; used where x > max(1, a + sqrt(a)), where it converges quickly. The
    result needs F (log x - digamma(a)) + dF/da, which sets the scale dF/da has to converge to."""
    shape = a.shape
    # Convergents k-2 and k-1, with k = 1 next (a_1 = 1, b_1 = x + 1 - a).
    A2, B2, dA2, dB2 = np.ones(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape)
    A1, B1, dA1, dB1 = np.zeros(shape), np.ones(shape), np.zeros(shape), np.zeros(shape)
    f, df = np.zeros(shape), np.zeros(shape)
    live = np.arange(a.size)
    k = 1
    while live.size and k < _MAX_ITERS:
        ak = 1.0 if k == 1 else -(k - 1.0) * (k - 1.0 - a[live])
        dak = 0.0 if k == 1 else k - 1.0
        bk = x[live] + (2.0 * k - 1.0) - a[live]
        a1, b1, da1, db1 = A1[live], B1[live], dA1[live], dB1[live]
        a2, b2, da2, db2 = A2[live], B2[live], dA2[live], dB2[live]
        an = bk * a1 + ak * a2
        bn = bk * b1 + ak * b2
        dan = -a1 + bk * da1 + dak * a2 + ak * da2
        dbn = -b1 + bk * db1 + dak * b2 + ak * db2
        # A common rescaling of all four leaves A/B and its derivative unchanged and keeps the
        # recurrence in range.
        scale = np.abs(bn)
        scale = np.where(
            (scale > 1e100) | ((scale < 1e-100) & (scale > 0)), 1.0 / np.where(scale > 0, scale, 1), 1
        )
        A2[live], B2[live], dA2[live], dB2[live] = a1 * scale, b1 * scale, da1 * scale, db1 * scale
        A1[live], B1[live], dA1[live], dB1[live] = an * scale, bn * scale, dan * scale, dbn * scale
        fn = an / bn
        dfn = (dan * bn - an * dbn) / (bn * bn)
        size = np.abs(dfn) + np.abs(fn * log_x_minus_psi[live])
        done = (np.abs(fn - f[live]) <= _EPS64 * np.abs(fn)) & (np.abs(dfn - df[live]) <= _EPS64 * size)
        done |= ~(np.isfinite(fn) & np.isfinite(dfn))
        f[live], df[live] = fn, dfn
        live = live[~(done & (k > 1))]
        k += 1
    return f, df


def _scaled_da(a, x):
    """(dP/da) / ax, with ax = x^a e^-x / Gamma(a), and log(ax) for broadcast float64 a, x; nan
    outside a > 0, 0 < x < inf. Both parameter derivatives are the first times a factor, which
    keeps random_gamma_grad free of the underflow of ax."""
    a, x = np.broadcast_arrays(a, x)
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    av, xv = np.where(valid, a, 1.0), np.where(valid, x, 1.0)
    log_ax, dlog = _log_ax_and_dlog(av, xv)
    # XLA switches at x = a; up to a + sqrt(a) the series is as accurate and, for large a, much
    # quicker than the continued fraction (which needs O(sqrt(a)) steps near x = a).
    use_cf = valid & (x > 1) & (x > a + np.sqrt(av))
    use_series = valid & ~use_cf
    if use_series.any():
        out[use_series] = _series_da(a[use_series], x[use_series], dlog[use_series])
    if use_cf.any():
        # Q = ax * F, so dP/da = -dQ/da = -ax (F (log x - digamma(a)) + dF/da).
        lp = dlog[use_cf]
        f, df = _cf_da(a[use_cf], x[use_cf], lp)
        out[use_cf] = -(f * lp + df)
    return out, log_ax, a, x


def _domain_fixups(out, a, x):
    out = np.where(x == 0, 0.0, out)
    return np.where((a <= 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)


def _igamma_grad_a_ref(a, x):
    s, log_ax, a, x = _scaled_da(a, x)
    return _domain_fixups(np.exp(log_ax) * s, a, x)


def _random_gamma_grad_ref(a, x):
    # -(dP/da) / (dP/dx) with dP/dx = x^(a-1) e^-x / Gamma(a) = ax / x.
    s, _, a, x = _scaled_da(a, x)
    return _domain_fixups(-x * s, a, x)


_POSITIVE = (0.2, 5.0)
igamma_p = binary_elementwise(
    "igamma",
    _in_float64(_gammainc_like(_sp.deferred("gammainc"))),
    dtypes="float",
    spec=TestSpec(cases=binary_cases("float", domain=_POSITIVE)),
)
igamma_p.stablehlo = hlo_special.igamma
igammac_p = binary_elementwise(
    "igammac",
    _in_float64(_gammainc_like(_sp.deferred("gammaincc"))),
    dtypes="float",
    spec=TestSpec(cases=binary_cases("float", domain=_POSITIVE)),
)
igammac_p.stablehlo = hlo_special.igammac
igamma_grad_a_p = binary_elementwise(
    "igamma_grad_a",
    _in_float64(_igamma_grad_a_ref),
    dtypes="float",
    spec=TestSpec(cases=binary_cases("float", domain=_POSITIVE)),
)
igamma_grad_a_p.stablehlo = hlo_special.igamma_grad_a
random_gamma_grad_p = binary_elementwise(
    "random_gamma_grad",
    _in_float64(_random_gamma_grad_ref),
    dtypes="float",
    spec=TestSpec(cases=binary_cases("float", domain=_POSITIVE)),
)
random_gamma_grad_p.stablehlo = hlo_special.random_gamma_grad


def _gamma_density(a, x):
    """dP/dx = x^(a-1) e^-x / Gamma(a)."""
    return exp(sub(mul(sub(a, 1.0), log(x)), add(x, lgamma(a))))


def _no_a_derivative(name, jax_note):
    def partial(g, ans, a, x):
        raise NotImplementedError(
            f"Differentiation rule for '{name}' with respect to a is not implemented ({jax_note}): it "
            "needs the second a-derivative of the incomplete gamma function. Wrap a in "
            "lax.stop_gradient if only the derivative with respect to x is wanted."
        )

    return partial


defjvp(
    igamma_p,
    lambda g, ans, a, x: mul(g, igamma_grad_a(a, x)),
    lambda g, ans, a, x: mul(g, _gamma_density(a, x)),
)
defjvp(
    igammac_p,
    lambda g, ans, a, x: neg(mul(g, igamma_grad_a(a, x))),
    lambda g, ans, a, x: neg(mul(g, _gamma_density(a, x))),
)
# d/dx dP/da = d/da dP/dx = density * (log x - digamma(a)).
defjvp(
    igamma_grad_a_p,
    _no_a_derivative("igamma_grad_a", "JAX has no rule for it at all"),
    lambda g, ans, a, x: mul(g, mul(_gamma_density(a, x), sub(log(x), digamma(a)))),
)
# r = -P_a / p with p = dP/dx: dr/dx = -(log x - digamma(a)) + r (1 - (a - 1) / x).
defjvp(
    random_gamma_grad_p,
    _no_a_derivative("random_gamma_grad", "JAX supports it in forward mode only"),
    lambda g, ans, a, x: mul(g, add(sub(digamma(a), log(x)), mul(ans, sub(1.0, div(sub(a, 1.0), x))))),
)
# Second derivatives in a raise, so the derivative matrix checks igamma/igammac to first order;
# igamma_grad_a and random_gamma_grad (whose a-derivative raises and which the matrix would
# perturb) are checked in x by tests/prims/test_special.py.
igamma_p.test_spec.grad_order = 1
igammac_p.test_spec.grad_order = 1
igamma_grad_a_p.test_spec.grad_order = 0
random_gamma_grad_p.test_spec.grad_order = 0


def igamma(a, x):
    """Elementwise regularized lower incomplete gamma function ``P(a, x)``."""
    return igamma_p.bind(*lax_binary_operands("igamma", a, x))


def igammac(a, x):
    """Elementwise regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    return igammac_p.bind(*lax_binary_operands("igammac", a, x))


def igamma_grad_a(a, x):
    """Elementwise derivative of ``igamma(a, x)`` with respect to `a`."""
    return igamma_grad_a_p.bind(*lax_binary_operands("igamma_grad_a", a, x))


def random_gamma_grad(a, x):
    """Elementwise derivative of a ``Gamma(a, 1)`` sample `x` with respect to `a` (implicit
    reparameterization): ``-(dP/da) / (dP/dx)`` at ``P = igamma(a, x)``."""
    return random_gamma_grad_p.bind(*lax_binary_operands("random_gamma_grad", a, x))


# ---------------------------------------------------------------------------------------------
# Regularized incomplete beta function I_x(a, b), JAX's `regularized_incomplete_beta` primitive.

regularized_incomplete_beta_p = Primitive("regularized_incomplete_beta")


def _betainc_abstract_eval(a, b, x):
    name = "regularized_incomplete_beta"
    for argname, aval in (("a", a), ("b", b), ("x", x)):
        check_dtype(name, aval.dtype, "float", argname)
    dtype = same_dtypes(name, (a, b, x))
    shape = broadcasting_shape(name, a, b, x)
    return ShapedArray(shape, dtype, a.weak_type and b.weak_type and x.weak_type)


def _betainc_cases(rng):
    out = []
    shapes = (
        ((), (), ()),
        ((3,), (3,), (3,)),
        ((2, 3), (), (2, 3)),
        ((1, 3), (2, 1), (2, 3)),
        ((0,), (0,), (0,)),
    )
    for dt in ("float32", "float16", "bfloat16"):
        for sa, sb, sx in shapes:
            a = random_array(rng, sa, dt, (0.5, 5.0))
            b = random_array(rng, sb, dt, (0.5, 5.0))
            x = random_array(rng, sx, dt, (0.05, 0.95))
            out.append(Case((a, b, x), {}, f"{dt}{list(sa)}{list(sb)}{list(sx)}"))
    vals = np.array([0.0, 0.5, 1.0, 2.0, -1.0, np.inf, np.nan], np.float32)
    xs = np.array([0.0, 0.3, 1.0, -0.5, 1.5, np.nan], np.float32)
    a, b, x = (m.ravel() for m in np.meshgrid(vals, vals, xs, indexing="ij"))
    out.append(Case((a, b, x), {}, "float32-specials"))
    return out


elementwise_primitive(
    regularized_incomplete_beta_p,
    _in_float64(_sp.deferred("betainc")),
    _betainc_abstract_eval,
    TestSpec(cases=_betainc_cases, grad_order=0),
)
regularized_incomplete_beta_p.stablehlo = hlo_special.regularized_incomplete_beta


def _betainc_ab_partial(g, ans, a, b, x):
    raise ValueError(
        "betainc: differentiation with respect to a and b is not supported (as in JAX's "
        "'Betainc gradient with respect to a and b not supported.'); only x is differentiable."
    )


def _betainc_x_partial(g, ans, a, b, x):
    # dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b), in logs.
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    return mul(g, exp(sub(add(mul(sub(b, 1.0), log1p(neg(x))), mul(sub(a, 1.0), log(x))), log_beta)))


defjvp(regularized_incomplete_beta_p, _betainc_ab_partial, _betainc_ab_partial, _betainc_x_partial)
# The derivative matrix would perturb a and b, whose derivative raises: x is checked to second
# order in tests/prims/test_special.py.


def betainc(a, b, x):
    """Elementwise regularized incomplete beta integral ``I_x(a, b)``."""
    return regularized_incomplete_beta_p.bind(*lax_nary_operands("betainc", a, b, x))


# ---------------------------------------------------------------------------------------------
# Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x.


def _zeta_ref(x, q):
    out = _sp.zeta(x, q)
    # XLA's conventions where SciPy differs: at the poles q = 0, -1, -2, ... (and q = -inf) the
    # sum is +inf for an even integer x and nan otherwise; an infinite or nan x and q = +inf give
    # nan; x = 1 is +inf whatever q is.
    pole = ((q <= 0) & (q == np.floor(q))) | (q == -np.inf)
    even = np.isfinite(x) & (x == 2 * np.floor(x / 2))
    out = np.where(pole, np.where(even, np.inf, np.nan), out)
    out = np.where(~np.isfinite(x) | (q == np.inf), np.nan, out)
    return np.where(x == 1, np.inf, out)


zeta_p = binary_elementwise(
    "zeta",
    _in_float64(_zeta_ref),
    dtypes="float",
    spec=TestSpec(
        cases=binary_cases("float", domain=(1.5, 5.0), rhs_domain=(0.2, 5.0), specials=FLOAT_SPECIALS),
        grad_order=0,
    ),
)
zeta_p.stablehlo = hlo.elementwise("chlo.zeta")


def _zeta_x_partial(g, ans, x, q):
    raise NotImplementedError(
        "Differentiation rule for 'zeta' with respect to x is not implemented (as in JAX); only q "
        "is differentiable: d/dq zeta(x, q) = -x zeta(x + 1, q)."
    )


defjvp(zeta_p, _zeta_x_partial, lambda g, ans, x, q: mul(g, neg(mul(x, zeta(add(x, 1.0), q)))))
# The derivative matrix would perturb x, whose derivative raises: q is checked to second order in
# tests/prims/test_special.py.


def zeta(x, q):
    """Elementwise Hurwitz zeta function ``zeta(x, q) = sum_{k>=0} (q + k) ** -x``."""
    return zeta_p.bind(*lax_binary_operands("zeta", x, q))
