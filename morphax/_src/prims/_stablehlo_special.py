"""StableHLO rules of lax's special functions XLA has no operation for: `bessel_i0e` (Cephes'
Chebyshev series), `igamma`, `igammac`, `igamma_grad_a`, `random_gamma_grad` (series and continued
fractions in while loops) and `regularized_incomplete_beta` (Lentz's algorithm), ported from JAX's
`jax._src.lax.special`; 16-bit floats compute in float32, as there."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.prims._stablehlo_expr import (
    Expr,
    abs_,
    any_true,
    digamma,
    exp,
    isnan,
    lgamma,
    log,
    log1p,
    sqrt,
    where,
    while_loop,
    wrap,
)

_F32 = np.dtype(np.float32)


def _floats(text: str) -> tuple:
    return tuple(float(v) for v in text.split())


def upcast_rule(fn):
    """A rule computing `fn(*exprs, dtype)` on the operands broadcast to the result's shape, in
    float32 for 16-bit floats (then rounded back)."""

    def rule(ctx, *xs, **params):
        out = ctx.avals_out[0]
        args = wrap(ctx, *xs, shape=out.shape)
        wide = _F32 if out.dtype.itemsize < 4 else out.dtype
        result = fn(*(a.astype(wide) for a in args), dtype=wide)
        return [result.astype(out.dtype).value]

    return rule


# ----------------------------------------------------------------------------- bessel_i0e

# Cephes' i0e coefficients (float64); the float32 series are their last 18 and 7.
_I0E_A = _floats(
    "-4.41534164647933937950E-18 3.33079451882223809783E-17 -2.43127984654795469359E-16 "
    "1.71539128555513303061E-15 -1.16853328779934516808E-14 7.67618549860493561688E-14 "
    "-4.85644678311192946090E-13 2.95505266312963983461E-12 -1.72682629144155570723E-11 "
    "9.67580903537323691224E-11 -5.18979560163526290666E-10 2.65982372468238665035E-9 "
    "-1.30002500998624804212E-8 6.04699502254191894932E-8 -2.67079385394061173391E-7 "
    "1.11738753912010371815E-6 -4.41673835845875056359E-6 1.64484480707288970893E-5 "
    "-5.75419501008210370398E-5 1.88502885095841655729E-4 -5.76375574538582365885E-4 "
    "1.63947561694133579842E-3 -4.32430999505057594430E-3 1.05464603945949983183E-2 "
    "-2.37374148058994688156E-2 4.93052842396707084878E-2 -9.49010970480476444210E-2 "
    "1.71620901522208775349E-1 -3.04682672343198398683E-1 6.76795274409476084995E-1"
)
_I0E_B = _floats(
    "-7.23318048787475395456E-18 -4.83050448594418207126E-18 4.46562142029675999901E-17 "
    "3.46122286769746109310E-17 -2.82762398051658348494E-16 -3.42548561967721913462E-16 "
    "1.77256013305652638360E-15 3.81168066935262242075E-15 -9.55484669882830764870E-15 "
    "-4.15056934728722208663E-14 1.54008621752140982691E-14 3.85277838274214270114E-13 "
    "7.18012445138366623367E-13 -1.79417853150680611778E-12 -1.32158118404477131188E-11 "
    "-3.14991652796324136454E-11 1.18891471078464383424E-11 4.94060238822496958910E-10 "
    "3.39623202570838634515E-9 2.26666899049817806459E-8 2.04891858946906374183E-7 "
    "2.89137052083475648297E-6 6.88975834691682398426E-5 3.36911647825569408990E-3 "
    "8.04490411014108831608E-1"
)


def _chebyshev(x: Expr, coefficients) -> Expr:
    b0 = b1 = b2 = x.like(0)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return (b0 - b2) * 0.5


def _i0e(x: Expr, *, dtype) -> Expr:
    a, b = (_I0E_A, _I0E_B) if dtype == np.float64 else (_I0E_A[-18:], _I0E_B[-7:])
    x = abs_(x)
    small = _chebyshev(x * 0.5 - 2.0, a)
    large = _chebyshev(32.0 / x - 2.0, b) / sqrt(x)
    return where(x <= 8.0, small, large)


bessel_i0e = upcast_rule(_i0e)


# ----------------------------------------------------------------------------- incomplete gamma

_VALUE, _DERIVATIVE, _SAMPLE_DERIVATIVE = "value", "derivative", "sample_derivative"


def _igamma_series(ax, x, a, enabled, dtype, mode):
    eps = float(_dtypes.finfo(dtype).eps)

    def body(enabled, r, c, ans, x_, dc_da, dans_da):
        old = (r, c, ans, x_, dc_da, dans_da)
        r = r + 1.0
        dc_da = dc_da * (x_ / r) - (c * x_) / (r * r)
        dans_da = dans_da + dc_da
        c = c * (x_ / r)
        ans = ans + c
        test = c / ans if mode == _VALUE else abs_(dc_da / dans_da)
        new = (r, c, ans, x_, dc_da, dans_da)
        return [enabled & (test > eps), *(where(enabled, n, o) for n, o in zip(new, old))]

    one, zero = a.like(1.0), a.like(0.0)
    vals = while_loop(lambda e, *rest: any_true(e), body, [enabled, a, one, one, x, zero, zero])
    ans, dans_da = vals[3], vals[6]
    if mode == _VALUE:
        return (ans * ax) / a
    dlogax_da = log(x) - digamma(a + 1.0)
    if mode == _DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return -(dans_da + ans * dlogax_da) * x / a


def _igammac_continued_fraction(ax, x, a, enabled, dtype, mode):
    eps = float(_dtypes.finfo(dtype).eps)

    def cond(enabled, ans, t, y, z, c, *rest):
        return any_true(enabled & (c < 2000.0))  # c: the same count in every element

    def body(enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans_da):
        old = (ans, t, y, z, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans_da)
        c, y, z = c + 1.0, y + 1.0, z + 2.0
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk.ne(0.0)
        r = pk / qk
        t = where(nonzero, abs_((ans - r) / r), 1.0)
        ans = where(nonzero, r, ans)
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        dans_new = where(nonzero, (dpk - ans * dqk) / qk, dans_da)
        grad_test = where(nonzero, abs_(dans_new - dans_da), 1.0)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2, dqkm2, dpkm1, dqkm1 = dpkm1, dqkm1, dpk, dqk
        rescale = abs_(pk) > 1.0 / eps
        pkm2, pkm1, qkm2, qkm1, dpkm2, dqkm2, dpkm1, dqkm1 = (
            where(rescale, v * eps, v) for v in (pkm2, pkm1, qkm2, qkm1, dpkm2, dqkm2, dpkm1, dqkm1)
        )
        test = t if mode == _VALUE else grad_test
        new = (ans, t, y, z, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans_new)
        kept = [where(enabled, n, o) for n, o in zip(new, old)]
        return [enabled & (test > eps), *kept[:4], c, *kept[4:]]

    y = 1.0 - a
    z = x + y + 1.0
    pkm1, qkm1 = x + 1.0, z * x
    ans = pkm1 / qkm1
    zero = x.like(0.0)
    dqkm1 = -x
    dans_da = (zero - ans * dqkm1) / qkm1
    init = [enabled, ans, x.like(1.0), y, z, zero, pkm1, qkm1, x.like(1.0), x, zero, zero, zero, dqkm1]
    vals = while_loop(cond, body, [*init, dans_da])
    ans = vals[1]
    if mode == _VALUE:
        return ans * ax
    dans_da = vals[14]
    dlogax_da = log(x) - digamma(a)
    if mode == _DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da)
    return -(dans_da + ans * dlogax_da) * x


def _gamma_setup(a, x, dtype):
    """log of the common factor x^a e^-x / Gamma(a) and where it underflows."""
    ax = a * log(x) - x - lgamma(a)
    return ax, ax < -float(np.log(_dtypes.finfo(dtype).max))


def _igamma(a, x, *, dtype):
    is_nan = isnan(a) | isnan(x)
    x_inf, a_zero, x_zero = x.eq(np.inf), a.eq(0.0), x.eq(0.0)
    domain_error = (x < 0.0) | (a < 0.0) | (a_zero & x_zero) | is_nan
    use_igammac = (x >= 1.0) & (x > a)
    ax, underflow = _gamma_setup(a, x, dtype)
    ax = exp(ax)
    enabled = ~(x_zero | domain_error | underflow | x_inf)
    cf = _igammac_continued_fraction(ax, x, a, enabled & use_igammac, dtype, _VALUE)
    series = _igamma_series(ax, x, a, enabled & ~use_igammac, dtype, _VALUE)
    out = where(use_igammac, 1.0 - cf, series)
    out = where(x_zero, 0.0, out)
    out = where(x_inf, 1.0, out)
    return where(domain_error, np.nan, out)


def _igammac(a, x, *, dtype):
    is_nan = isnan(a) | isnan(x)
    x_inf, a_zero, x_zero = x.eq(np.inf), a.eq(0.0), x.eq(0.0)
    domain_error = (x < 0.0) | (a < 0.0) | (a_zero & x_zero) | is_nan
    use_igamma = (x < 1.0) | (x < a)
    ax, underflow = _gamma_setup(a, x, dtype)
    enabled = ~(domain_error | underflow | x_inf | a_zero)
    ax = exp(ax)
    series = _igamma_series(ax, x, a, enabled & use_igamma, dtype, _VALUE)
    cf = _igammac_continued_fraction(ax, x, a, enabled & ~use_igamma, dtype, _VALUE)
    out = where(use_igamma, 1.0 - series, cf)
    out = where(x_inf | a_zero, 0.0, out)
    return where(domain_error, np.nan, out)


def _gamma_derivative(mode):
    """igamma_grad_a (dP/da) or random_gamma_grad (the derivative of a Gamma(a) sample in a)."""

    def fn(a, x, *, dtype):
        is_nan = isnan(a) | isnan(x)
        x_zero = x.eq(0.0)
        domain_error = (x < 0.0) | (a <= 0.0)
        use_igammac = (x > 1.0) & (x > a)
        ax, underflow = _gamma_setup(a, x, dtype)
        ax = exp(ax)
        enabled = ~(x_zero | domain_error | underflow | is_nan)
        cf = _igammac_continued_fraction(ax, x, a, enabled & use_igammac, dtype, mode)
        series = _igamma_series(ax, x, a, enabled & ~use_igammac, dtype, mode)
        out = where(use_igammac, -cf, series)
        out = where(x_zero, 0.0, out)
        return where(domain_error | is_nan, np.nan, out)

    return fn


igamma = upcast_rule(_igamma)
igammac = upcast_rule(_igammac)
igamma_grad_a = upcast_rule(_gamma_derivative(_DERIVATIVE))
random_gamma_grad = upcast_rule(_gamma_derivative(_SAMPLE_DERIVATIVE))


# ----------------------------------------------------------------------------- incomplete beta


def _lentz(num_iterations, small, threshold, numerator, denominator):
    """The continued fraction b0 + a1 / (b1 + a2 / (b2 + ...)) by the Lentz-Thompson-Barnett
    algorithm, until every element's step is within `threshold` of 1."""
    first = denominator(0)
    h = where(abs_(first) < small, small, first)
    ctx = h.ctx
    i32, b = np.dtype(np.int32), np.dtype(bool)
    start = [Expr(ctx, ctx.constant(1, i32)), Expr(ctx, ctx.constant(True, b)), h, h.like(0.0), h]

    def cond(i, unconverged, *rest):
        return (i < num_iterations) & unconverged

    def body(i, unconverged, c, d, h):
        num, den = numerator(i), denominator(i)
        c = den + num / c
        c = where(abs_(c) < small, small, c)
        d = den + num * d
        d = 1.0 / where(abs_(d) < small, small, d)
        delta = c * d
        return [i + 1, any_true(abs_(delta - 1.0) >= threshold), c, d, h * delta]

    return while_loop(cond, body, start)[4]


def _betainc(a, b, x, *, dtype):
    shape, ctx = a.shape, a.ctx

    def spread(i):
        return Expr(ctx, ctx.broadcast(i.value, shape))

    def numerator(i):
        i = spread(i)
        even, is_one = i.op("remainder", 2).eq(0), i.eq(1)
        m_int = (i - 1).op("divide", 2)
        m = m_int.astype(dtype)
        zero_num = -(a + b) * x / (a + 1.0)
        even_num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        even_num = where(m_int.eq(0), zero_num, even_num)
        odd_num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        return where(is_one, 1.0, where(even, even_num, odd_num))

    def denominator(i):
        if isinstance(i, int):
            return x.like(0.0 if i == 0 else 1.0)
        return where(spread(i).eq(0), x.like(0.0), 1.0)

    a_zero = a.eq(0.0) | b.eq(np.inf)
    b_zero = b.eq(0.0) | a.eq(np.inf)
    x_zero, x_one = x.eq(0.0), x.eq(1.0)
    is_nan = isnan(a) | isnan(b) | isnan(x)
    result_zero = (b_zero & ~x_one) | (a_zero & x_zero)
    result_one = (a_zero & ~x_zero) | (b_zero & x_one)
    result_nan = (a < 0.0) | (b < 0.0) | (x < 0.0) | (x > 1.0) | (a_zero & b_zero) | is_nan
    # The fraction converges fast for x < (a + 1) / (a + b + 2); else use I_x(a, b) = 1 - I_1-x(b, a).
    rapid = x < (a + 1.0) / (a + b + 2.0)
    a, b, x = where(rapid, a, b), where(rapid, b, a), where(rapid, x, 1.0 - x)
    finfo = _dtypes.finfo(dtype)
    half_eps = float(finfo.eps) / 2
    fraction = _lentz(200 if dtype == _F32 else 600, half_eps, half_eps, numerator, denominator)
    # For tiny a, a * Gamma(a) = Gamma(a + 1) -> 1 avoids dividing by zero.
    lbeta_small_a = lgamma(b) - lgamma(a + b)
    lbeta = lgamma(a) + lbeta_small_a
    factor = where(
        a < float(finfo.tiny) * 2,
        exp(log1p(-x) * b - lbeta_small_a),
        exp(log(x) * a + log1p(-x) * b - lbeta) / a,
    )
    result = fraction * factor
    result = where(rapid, result, 1.0 - result)
    result = where(result_zero, 0.0, result)
    result = where(result_one, 1.0, result)
    return where(result_nan, np.nan, result)


regularized_incomplete_beta = upcast_rule(_betainc)
