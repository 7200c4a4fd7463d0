"""Rejection and composite samplers, step for step as JAX: gamma (Marsaglia-Tsang per element with
an implicit reparameterization gradient), loggamma, beta, dirichlet, chisquare, f, t,
generalized_normal, ball, poisson (Knuth / Hormann), binomial (inversion / BTRS), multinomial.
Loops are `lax.while_loop`s over whole arrays, so every sampler traces under jit, vmap and grad."""

from __future__ import annotations

import math

import numpy as np

from morphax._src.api.vmap import vmap
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.higher_order.while_loop import while_loop
from morphax._src.numpy import creation as _creation
from morphax._src.numpy import manipulation as _manip
from morphax._src.numpy import reductions as _red
from morphax._src.numpy import ufuncs as _uf
from morphax._src.numpy import util as _util
from morphax._src.prims import lax_api as L
from morphax._src.random.distributions import (
    _check_shape,
    _float_dtype,
    _shape_of,
    _uniform,
    exponential,
    normal,
    rademacher,
    uniform,
)
from morphax._src.random.prng import check_key, key_row, split
from morphax._src.transforms.custom import custom_jvp

__all__ = [
    "ball",
    "beta",
    "binomial",
    "chisquare",
    "dirichlet",
    "f",
    "gamma",
    "generalized_normal",
    "loggamma",
    "multinomial",
    "poisson",
    "random_gamma_grad",
    "t",
]


# ---------------------------------------------------------------------------------------- helpers


def key_rows(keys, n):
    """The `n` single keys of a ``uint32[n, 2]`` (or typed ``key<fry>[n]``) key array."""
    return [key_row(keys, i) for i in range(n)]


def split_n(key, n=2):
    return key_rows(split(key, n), n)


def c(value, dtype):
    """A (strongly typed) constant of `dtype`."""
    return make_array(np.asarray(value).astype(dtype), dtype)


def broadcast_shapes_of(name, shape, *args):
    """JAX's rule: the arguments' broadcast shape when `shape` is None, else `shape` checked."""
    shapes = [_shape_of(_util.asarray_like(a)) for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    shape = _creation.canonicalize_shape(shape, name)
    _check_shape(name, shape, *shapes)
    return shape


def as_dtype(x, dtype):
    return _util.convert_element_type(_util.asarray_like(x), dtype)


def _isnan(x):
    return L.ne(x, x)


def _any(x):
    return L.reduce_or(x, tuple(range(len(get_aval(x).shape))))


# ------------------------------------------------------------------------------------------ gamma


def _gamma_one(key, alpha, log_space):
    """One Gamma(alpha) draw by Marsaglia and Tsang (2000), JAX's exact key schedule: an outer
    accept/reject loop whose every round draws a normal (itself looped until 1 + c x > 0) and a
    uniform. alpha < 1 is boosted to alpha + 1 and scaled back by U**(1/alpha)."""
    dtype = get_aval(alpha).dtype
    zero, one = c(0, dtype), c(1, dtype)
    boost_mask = L.ge(alpha, one)
    alpha_orig = alpha
    alpha = L.select_n(boost_mask, L.add(alpha, one), alpha)
    d = L.sub(alpha, c(1.0 / 3.0, dtype))
    cc = L.div(c(1.0 / 3.0, dtype), L.sqrt(d))

    def cond_fn(state):
        _, x2, v, u = state
        # Reject unless the cheap squeeze test or the exact log test accepts.
        squeeze = L.ge(u, L.sub(one, L.mul(c(0.0331, dtype), L.mul(x2, x2))))
        exact = L.ge(L.log(u), L.add(L.mul(x2, c(0.5, dtype)), L.mul(d, L.add(L.sub(one, v), L.log(v)))))
        return L.bitwise_and(squeeze, exact)

    def body_fn(state):
        def next_kxv(kxv):
            k, subkey = split_n(kxv[0])
            x = normal(subkey, (), dtype)
            return k, x, L.add(one, L.mul(x, cc))

        k, x_key, u_key = split_n(state[0], 3)
        _, x, v = while_loop(lambda kxv: L.le(kxv[2], zero), next_kxv, (x_key, zero, L.neg(one)))
        return k, L.mul(x, x), L.mul(L.mul(v, v), v), uniform(u_key, (), dtype)

    k, subkey = split_n(key)
    # The initial state makes cond_fn true, so the body runs at least once.
    _, _, v, _ = while_loop(cond_fn, body_fn, (k, zero, one, c(2, dtype)))
    if log_space:
        # log U ~ -Exponential, computed from log1p(-u) as `exponential` does.
        log_samples = L.neg(exponential(subkey, (), dtype))
        skip = L.bitwise_or(boost_mask, L.eq(log_samples, zero))
        log_boost = L.select_n(skip, L.mul(log_samples, L.div(one, alpha_orig)), zero)
        return L.add(L.add(L.log(d), L.log(v)), log_boost)
    samples = L.sub(one, uniform(subkey, (), dtype))
    boost = L.select_n(boost_mask, L.pow(samples, L.div(one, alpha_orig)), one)
    return L.mul(L.mul(d, v), boost)


def _gamma_impl(key, a, log_space):
    shape = get_aval(a).shape
    n = math.prod(shape)
    if n == 0:
        return a
    # One key per element, as JAX: split(key, a.size), then the scalar sampler vectorized.
    keys = split(key, n)
    out = vmap(lambda k, al: _gamma_one(k, al, log_space))(keys, L.reshape(a, (n,)))
    return L.reshape(out, shape)


def _keep_where(on, new, old):
    """Lanes still iterating (`on`) take the new values; converged lanes keep theirs."""
    return tuple(L.select_n(on, o, n) for n, o in zip(new, old))


def _igamma_series(x, a, enabled, dtype):
    """d sample / d a from the series of P(a, x) and its a-derivative (used for x <= max(1, a))."""
    eps = c(_dtypes.finfo(dtype).eps, dtype)

    def body(vals):
        on, old = vals[0], vals[1:]
        r, term, ans, dterm_da, dans_da = old
        r = r + 1
        dterm_da = dterm_da * (x / r) - (term * x) / (r * r)
        dans_da = dans_da + dterm_da
        term = term * (x / r)
        ans = ans + term
        more = L.bitwise_and(on, L.abs(dterm_da / dans_da) > eps)
        return (more, *_keep_where(on, (r, term, ans, dterm_da, dans_da), old))

    ones, zeros = _creation.ones_like(a), _creation.zeros_like(a)
    vals = while_loop(lambda v: _any(v[0]), body, (enabled, a, ones, ones, zeros, zeros))
    ans, dans_da = vals[3], vals[5]
    dlogax_da = L.log(x) - L.digamma(a + 1)
    return -(dans_da + ans * dlogax_da) * x / a


def _igammac_cf(x, a, enabled, dtype):
    """d sample / d a from the continued fraction of Q(a, x) and its a-derivative (x > max(1, a))."""
    eps = c(_dtypes.finfo(dtype).eps, dtype)

    def body(vals):
        on, k, old = vals[0], vals[1], vals[2:]
        ans, y, z, pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2, dans = old
        k = k + 1
        y = y + 1
        z = z + 2
        yc = y * k
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nz = qk != 0
        ans_new = L.select_n(nz, ans, pk / qk)
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * k
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * k
        dans_new = L.select_n(nz, dans, (dpk - ans_new * dqk) / qk)
        change = L.select_n(nz, _creation.ones_like(dans), L.abs(dans_new - dans))
        # Rescale the convergents once they pass 1/eps; only their ratios matter.
        big = L.abs(pk) > 1 / eps
        pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2 = (
            L.select_n(big, v, v * eps) for v in (pk, qk, pkm1, qkm1, dpk, dqk, dpkm1, dqkm1)
        )
        new = (ans_new, y, z, pkm1, qkm1, pkm2, qkm2, dpkm1, dqkm1, dpkm2, dqkm2, dans_new)
        return (L.bitwise_and(on, change > eps), k, *_keep_where(on, new, old))

    y = 1 - a
    z = x + y + 1
    pkm1 = x + 1
    qkm1 = z * x
    ans = pkm1 / qkm1
    zeros = _creation.zeros_like(x)
    dans = (zeros - ans * -x) / qkm1
    init = (
        enabled,
        c(0, dtype),
        ans,
        y,
        z,
        pkm1,
        qkm1,
        _creation.ones_like(x),
        x,
        zeros,
        -x,
        zeros,
        zeros,
        dans,
    )
    # At most 2000 terms, as XLA.
    vals = while_loop(lambda v: L.bitwise_and(v[1] < 2000, _any(v[0])), body, init)
    ans, dans = vals[2], vals[13]
    dlogax_da = L.log(x) - L.digamma(a)
    return -(dans + ans * dlogax_da) * x


def random_gamma_grad(a, x):
    """d x / d a for x ~ Gamma(a) at fixed quantile: ``-(dP(a, x)/da) / pdf(x; a)``, where P is
    the regularized lower incomplete gamma function (series below the mode, continued fraction
    above), evaluated in the dtype of `a` as XLA's RandomGammaGrad."""
    dtype = get_aval(a).dtype
    is_nan = L.bitwise_or(_isnan(a), _isnan(x))
    x_is_zero = L.eq(x, c(0, dtype))
    domain_error = L.bitwise_or(L.lt(x, c(0, dtype)), L.le(a, c(0, dtype)))
    use_cf = L.bitwise_and(L.gt(x, c(1, dtype)), L.gt(x, a))
    log_ax = L.sub(L.sub(L.mul(a, L.log(x)), x), L.lgamma(a))
    underflow = L.lt(log_ax, c(-np.log(_dtypes.finfo(dtype).max), dtype))
    enabled = L.bitwise_not(
        L.bitwise_or(L.bitwise_or(x_is_zero, domain_error), L.bitwise_or(underflow, is_nan))
    )
    cf = L.neg(_igammac_cf(x, a, L.bitwise_and(enabled, use_cf), dtype))
    series = _igamma_series(x, a, L.bitwise_and(enabled, L.bitwise_not(use_cf)), dtype)
    out = L.select_n(use_cf, series, cf)
    out = L.select_n(x_is_zero, out, _creation.zeros_like(out))
    return L.select_n(L.bitwise_or(domain_error, is_nan), out, _creation.full_like(a, np.nan))


def _gamma_grad(sample, a, log_space):
    if not log_space:
        return random_gamma_grad(a, sample)
    # d log(x) = dx / x; exp(log x) may round to 0, then use the smallest normal instead.
    x = L.exp(sample)
    dtype = get_aval(x).dtype
    x = L.select_n(L.eq(x, c(0, dtype)), x, _creation.full_like(x, _dtypes.finfo(dtype).tiny))
    return L.div(random_gamma_grad(a, x), x)


def _make_gamma(log_space):
    @custom_jvp
    def sample(key, a):
        return _gamma_impl(key, a, log_space)

    @sample.defjvp
    def _jvp(primals, tangents):
        key, a = primals
        ans = sample(key, a)
        # Implicit reparameterization: d sample = (d sample / d a) da, from the CDF.
        return ans, L.mul(tangents[1], _gamma_grad(ans, a, log_space))

    return sample


_gamma_sample = _make_gamma(False)
_loggamma_sample = _make_gamma(True)


def _gamma(key, a, shape, dtype, log_space):
    a = _util.asarray_like(a)
    if shape is None:
        shape = get_aval(a).shape
    else:
        _check_shape("gamma", shape, get_aval(a).shape)
    a = _util.convert_element_type(a, dtype)
    if get_aval(a).shape != shape:
        a = _manip.broadcast_to(a, shape)
    return (_loggamma_sample if log_space else _gamma_sample)(key, a)


def _dtype_or_float(name, dtype):
    return _float_dtype(name, float if dtype is None else dtype)


def _opt_shape(name, shape):
    return None if shape is None else _creation.canonicalize_shape(shape, name)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a) samples (unit scale), differentiable in `a` by implicit reparameterization."""
    key = check_key("gamma", key)
    dtype = _dtype_or_float("gamma", dtype)
    return _gamma(key, a, _opt_shape("gamma", shape), dtype, False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a) samples, computed in log space (accurate for small `a`)."""
    key = check_key("loggamma", key)
    dtype = _dtype_or_float("loggamma", dtype)
    return _gamma(key, a, _opt_shape("loggamma", shape), dtype, True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples as G_a / (G_a + G_b) from two log-gamma draws."""
    key = check_key("beta", key)
    dtype = _dtype_or_float("beta", dtype)
    shape = broadcast_shapes_of("beta", shape, a, b)
    key_a, key_b = split_n(key)
    a = _manip.broadcast_to(as_dtype(a, dtype), shape)
    b = _manip.broadcast_to(as_dtype(b, dtype), shape)
    log_ga = loggamma(key_a, a, shape, dtype)
    log_gb = loggamma(key_b, b, shape, dtype)
    # Scale by the larger so the ratio never overflows or underflows to 0/0.
    log_max = L.max(log_ga, log_gb)
    ga = _uf.exp(_uf.subtract(log_ga, log_max))
    gb = _uf.exp(_uf.subtract(log_gb, log_max))
    return _uf.true_divide(ga, _uf.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples along the last axis: softmax of log-gamma draws."""
    key = check_key("dirichlet", key)
    dtype = _dtype_or_float("dirichlet", dtype)
    alpha = _util.asarray_like(alpha)
    ashape = get_aval(alpha).shape
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    if shape is None:
        shape = ashape[:-1]
    else:
        shape = _creation.canonicalize_shape(shape, "dirichlet")
        _check_shape("dirichlet", shape, ashape[:-1])
    alpha = _util.convert_element_type(alpha, dtype)
    log_g = loggamma(key, alpha, shape + ashape[-1:], dtype)
    unnormalized = _uf.exp(_uf.subtract(log_g, L.stop_gradient(_red.max(log_g, -1, keepdims=True))))
    return _uf.true_divide(unnormalized, _red.sum(unnormalized, -1, keepdims=True))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square(df) samples: 2 * Gamma(df / 2), drawn in log space."""
    key = check_key("chisquare", key)
    dtype = _dtype_or_float("chisquare", dtype)
    shape = broadcast_shapes_of("chisquare", shape, df)
    return _chisquare(key, as_dtype(df, dtype), shape, dtype)


def _chisquare(key, df, shape, dtype):
    two = c(2, dtype)
    log_g = loggamma(key, L.div(df, two), shape, dtype)
    return L.mul(_uf.exp(log_g), two)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) samples: the ratio of two scaled chi-square draws."""
    key = check_key("f", key)
    dtype = _dtype_or_float("f", dtype)
    shape = broadcast_shapes_of("f", shape, dfnum, dfden)
    dfden, dfnum = as_dtype(dfden, dtype), as_dtype(dfnum, dtype)
    key_dfd, key_dfn = split_n(key)
    chi2_dfn = _chisquare(key_dfn, dfnum, shape, dtype)
    chi2_dfd = _chisquare(key_dfd, dfden, shape, dtype)
    # jnp's division broadcasts parameters of lower rank than `shape` (JAX's lax.div would not).
    return _uf.true_divide(_uf.true_divide(chi2_dfn, dfnum), _uf.true_divide(chi2_dfd, dfden))


def t(key, df, shape=None, dtype=None):
    """Student's t(df) samples: normal * sqrt((df/2) / Gamma(df/2))."""
    key = check_key("t", key)
    dtype = _dtype_or_float("t", dtype)
    shape = broadcast_shapes_of("t", shape, df)
    df = as_dtype(df, dtype)
    key_n, key_g = split_n(key)
    n = normal(key_n, shape, dtype)
    half_df = L.div(df, c(2, dtype))
    g = gamma(key_g, half_df, shape, dtype)
    return _uf.multiply(n, _uf.sqrt(_uf.true_divide(half_df, g)))


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal samples with density proportional to exp(-|x|**p)."""
    key = check_key("generalized_normal", key)
    dtype = _dtype_or_float("generalized_normal", dtype)
    shape = _creation.canonicalize_shape(shape, "generalized_normal")
    return _generalized_normal(key, p, shape, dtype)


def _generalized_normal(key, p, shape, dtype):
    k_g, k_r = split_n(key)
    # Plain operators, as JAX: a Python `p` is inverted in double precision.
    g = gamma(k_g, 1 / p, shape, dtype)
    r = rademacher(k_r, shape, dtype)
    return r * g ** (1 / p)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit p-norm ball of dimension `d`, shape ``(*shape, d)``."""
    key = check_key("ball", key)
    dtype = _dtype_or_float("ball", dtype)
    shape = _creation.canonicalize_shape(shape, "ball")
    d = _creation.concrete_int(d, "The error occurred in random.ball()")
    k1, k2 = split_n(key)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = exponential(k2, shape, dtype)
    norm = (_red.sum(_uf.abs(g) ** p, -1) + e) ** (1 / p)
    return g / _manip.expand_dims(norm, -1)


# ---------------------------------------------------------------------------------------- poisson


def _poisson_knuth(key, lam, shape, dtype):
    # Multiply uniforms until the product drops below exp(-lam); the count of factors minus one
    # is Poisson(lam). Sums of logs stand in for the products.
    def body(carry):
        k, rng, log_prod = carry
        rng, subkey = split_n(rng)
        k = L.select_n(L.gt(log_prod, L.neg(lam)), k, L.add(k, make_array(1, dtype)))
        u = _uniform(subkey, shape, np.dtype(np.float32), 0.0, 1.0)
        return k, rng, L.add(log_prod, L.log(u))

    init = (_creation.zeros(shape, dtype), key, _creation.zeros(shape, np.float32))
    k = while_loop(lambda cr: _any(L.gt(cr[2], L.neg(lam))), body, init)[0]
    return L.sub(k, make_array(1, dtype))


def _poisson_rejection(key, lam, shape, dtype):
    # Hormann's transformed rejection with squeeze (PTRS).
    f32 = get_aval(lam).dtype
    log_lam = L.log(lam)
    b = 0.931 + 2.53 * L.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        k_out, accepted, rng = carry
        rng, k0, k1 = split_n(rng, 3)
        u = _uniform(k0, shape, f32, 0.0, 1.0) - 0.5
        v = _uniform(k1, shape, f32, 0.0, 1.0)
        us = 0.5 - L.abs(u)
        k = L.floor((2 * a / us + b) * u + lam + 0.43)
        s = L.log(v * inv_alpha / (a / (us * us) + b))
        tt = -lam + k * log_lam - L.lgamma(k + 1)
        accept1 = L.bitwise_and(us >= 0.07, v <= v_r)
        reject = L.bitwise_or(k < 0, L.bitwise_and(us < 0.013, v > us))
        accept = L.bitwise_or(accept1, L.bitwise_and(L.bitwise_not(reject), s <= tt))
        return L.select_n(accept, k_out, k), L.bitwise_or(accepted, accept), rng

    init = (_creation.full(shape, -1, f32), _creation.zeros(shape, bool), key)
    k = while_loop(lambda cr: _any(L.bitwise_not(cr[1])), body, init)[0]
    return L.convert_element_type(k, dtype)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) counts: Knuth's product of uniforms for lam < 10, Hormann's transformed
    rejection above (the split of TensorFlow and NumPy, as JAX); lam is taken in float32."""
    key = check_key("poisson", key)
    _dtypes.check_user_dtype_supported(int if dtype is None else dtype, "poisson")
    dtype = _dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not _dtypes.is_integer(dtype):
        raise ValueError(f"dtype argument to `poisson` must be an int dtype, got {dtype}")
    lam = _util.asarray_like(lam)
    shape = get_aval(lam).shape if shape is None else _creation.canonicalize_shape(shape, "poisson")
    lam = L.convert_element_type(_manip.broadcast_to(lam, shape), np.dtype(np.float32))
    use_knuth = L.bitwise_or(_isnan(lam), L.lt(lam, c(10, np.float32)))
    lam_knuth = L.select_n(use_knuth, _creation.zeros_like(lam), lam)
    # The rejection branch runs on every element; give the Knuth lanes a rate it accepts fast.
    lam_rejection = L.select_n(use_knuth, lam, _creation.full_like(lam, 1e5))
    result = L.select_n(
        use_knuth,
        _poisson_rejection(key, lam_rejection, shape, dtype),
        _poisson_knuth(key, lam_knuth, shape, dtype),
    )
    return L.select_n(L.eq(lam, c(0, np.float32)), result, _creation.zeros_like(result))


# --------------------------------------------------------------------------------------- binomial


def _stirling_approx_tail(k):
    """log k! - Stirling's approximation: a table for k <= 9, the asymptotic series beyond
    (evaluated, as JAX's, at k clamped to [0, 9])."""
    dtype = get_aval(k).dtype
    table = c(
        [0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
         0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
         0.00925546218271273, 0.00833056343336287],
        dtype,
    )  # fmt: skip
    use_table = L.le(k, c(9, dtype))
    k = L.clamp(c(0, dtype), k, c(9, dtype))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    idx = L.convert_element_type(L.floor(k), np.dtype(np.int32))
    return L.select_n(use_table, approx, table[idx])


def _binomial_inversion(key, count, prob, shape):
    # Count geometric waiting times until their sum passes `count`.
    dtype = get_aval(prob).dtype
    log1mp = L.log1p(L.neg(prob))

    def body(carry):
        num_geom, geom_sum, rng = carry
        subkey, rng = split_n(rng)
        num_geom = L.select_n(L.le(geom_sum, count), num_geom, num_geom + 1)
        u = _uniform(subkey, shape, dtype, 0.0, 1.0)
        geom = L.ceil(L.log(u) / log1mp)
        return num_geom, geom_sum + geom, rng

    zeros = _creation.zeros(shape, dtype)
    k = while_loop(lambda cr: _any(L.le(cr[1], count)), body, (zeros, zeros, key))[0]
    return k - 1


def _btrs(key, count, prob, shape):
    # Hormann's transformed rejection with squeeze for binomials (BTRS).
    dtype = get_aval(prob).dtype
    stddev = L.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    cc = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = L.floor((count + 1) * prob)
    log, sat = L.log, _stirling_approx_tail

    def body(carry):
        k_out, accepted, rng = carry
        rng, k0, k1 = split_n(rng, 3)
        u = _uniform(k0, shape, dtype, 0.0, 1.0)
        v = _uniform(k1, shape, dtype, 0.0, 1.0)
        u = u - 0.5
        us = 0.5 - L.abs(u)
        accept1 = L.bitwise_and(us >= 0.07, v <= v_r)
        k = L.floor((2 * a / us + b) * u + cc)
        reject = L.bitwise_or(k < 0, k > count)
        v = log(v * alpha / (a / (us * us) + b))
        ub = (
            (m + 0.5) * log((m + 1) / (r * (count - m + 1)))
            + (count + 1) * log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * log(r * (count - k + 1) / (k + 1))
            + sat(m)
            + sat(count - m)
            - sat(k)
            - sat(count - k)
        )
        accept = L.bitwise_or(accept1, L.bitwise_and(L.bitwise_not(reject), v <= ub))
        return L.select_n(accept, k_out, k), L.bitwise_or(accepted, accept), rng

    init = (_creation.full(shape, -1, dtype), _creation.zeros(shape, bool), key)
    return while_loop(lambda cr: _any(L.bitwise_not(cr[1])), body, init)[0]


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats: inversion by geometric waiting times when n * q <= 10,
    BTRS otherwise, with q = min(p, 1 - p) (the split of TensorFlow, as JAX)."""
    key = check_key("binomial", key)
    _util.check_arraylike("binomial", n, p)
    dtype = _dtype_or_float("binomial", dtype)
    count, prob = _util.asarray_like(n), _util.asarray_like(p)
    if shape is None:
        shape = tuple(np.broadcast_shapes(get_aval(count).shape, get_aval(prob).shape))
    else:
        shape = _creation.canonicalize_shape(shape, "binomial")
        _check_shape("binomial", shape, get_aval(count).shape, get_aval(prob).shape)
    (prob,) = _util.promote_dtypes_inexact(prob)
    pdt = get_aval(prob).dtype
    count = _manip.broadcast_to(_util.convert_element_type(count, pdt), shape)
    prob = _manip.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = L.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = L.bitwise_or(_isnan(count), count < 0.0)
    count_inf = _uf.isinf(count)
    q_is_nan = _isnan(q)
    q_l_0 = q < 0.0
    q = L.select(L.bitwise_or(q_is_nan, q_l_0), _creation.full_like(q, 0.01), q)
    use_inversion = L.bitwise_or(count_nan_or_neg, count * q <= 10.0)
    # Float counts round down, as np.random.binomial.
    count = L.floor(count)
    # Both samplers run on every element; give each the other's lanes parameters it ends fast on.
    count_inv = L.select(use_inversion, count, _creation.zeros_like(count))
    count_btrs = L.select(use_inversion, _creation.full_like(count, 1e4), count)
    q_btrs = L.select(use_inversion, _creation.full_like(q, 0.5), q)
    samples = L.select(
        use_inversion,
        L.convert_element_type(_binomial_inversion(key, count_inv, q, shape), dtype),
        L.convert_element_type(_btrs(key, count_btrs, q_btrs, shape), dtype),
    )
    # nan p or a nan/negative n gives nan; an infinite n gives inf.
    invalid = L.bitwise_or(L.bitwise_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = L.select(invalid, _creation.full_like(samples, np.nan), samples)
    samples = L.select(
        L.bitwise_and(count_inf, L.bitwise_not(invalid)), _creation.full_like(samples, np.inf), samples
    )
    keep = L.bitwise_or(L.bitwise_or(p_lt_half, count_nan_or_neg), L.bitwise_or(q_is_nan, count_inf))
    return L.select(keep, samples, L.convert_element_type(count, dtype) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts (outcomes on the last axis): one binomial per outcome on the
    trials left, with probability p_i / (p_i + ... + p_last), as JAX's scan."""
    del unroll  # the loop over outcomes is unrolled at trace time
    key = check_key("multinomial", key)
    _util.check_arraylike("multinomial", n, p)
    n, p = _util.promote_dtypes_inexact(n, p)
    if shape is None:
        shape = get_aval(p).shape
    else:
        shape = _creation.canonicalize_shape(shape, "multinomial")
    n = _manip.broadcast_to(n, shape[:-1])
    p = _manip.moveaxis(_manip.broadcast_to(p, shape), -1, 0)
    remaining = L.cumsum(p, 0, reverse=True)
    ratios = p / _uf.where(remaining == 0, 1, remaining)
    k = shape[-1]
    remainder, counts = n, []
    for i, ki in enumerate(key_rows(split(key, k), k)):
        ratio = L.reshape(L.slice_in_dim(ratios, i, i + 1, axis=0), shape[:-1])
        count = binomial(ki, remainder, _uf.clip(ratio, 0, 1), dtype=get_aval(remainder).dtype)
        remainder = remainder - count
        counts.append(count)
    out = _manip.stack(counts, -1) if counts else _creation.zeros(shape, get_aval(n).dtype)
    return L.convert_element_type(out, _dtypes.canonicalize_dtype(float if dtype is None else dtype))
