"""The samplers of issue 8 beyond uniform/normal: statistics at fixed keys, shapes and dtypes, the
same bits eagerly / under jit / under vmap, agreement with JAX (bit for bit where the algorithm
and its operations match), and gradients (normal's location-scale, gamma's implicit one).

Thresholds (all checked once against a deterministic draw, so nothing here is flaky):
- moments: sample mean within Z = 5 standard errors of the mean, sample variance within 5
  standard errors of the variance (sqrt((mu4 - var**2) / N), plus Z**2 var / N for the squared
  mean error it contains); a correct sampler fails one such bound with probability about 6e-7.
- Kolmogorov-Smirnov (continuous) and chi-square (discrete, bins with expected count >= 5):
  reject only at p <= 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import morphax
import morphax.numpy as jnp
from morphax import random

N = 20_000
Z = 5.0
P_MIN = 1e-3


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def mode(request):
    old = morphax.config.threefry_partitionable
    morphax.config.update("jax_threefry_partitionable", request.param)
    yield request.param
    morphax.config.update("jax_threefry_partitionable", old)


@pytest.fixture
def x64():
    old = morphax.config.enable_x64
    morphax.config.update("jax_enable_x64", True)
    yield
    morphax.config.update("jax_enable_x64", old)


def _np(x):
    return np.asarray(x).astype(np.float64)


def check_moments(x, mean, var, kurt_excess):
    """Sample mean and variance against the distribution's, to Z standard errors each."""
    n = x.size
    assert abs(x.mean() - mean) < Z * np.sqrt(var / n), (x.mean(), mean)
    mu4 = (kurt_excess + 3) * var**2
    # The sample variance also subtracts the squared error of the sample mean, below Z**2 var / n
    # once the mean check holds (the whole deviation for a symmetric Bernoulli, where mu4 = var**2).
    bound = Z * np.sqrt((mu4 - var**2) / n) + Z**2 * var / n
    assert abs(x.var() - var) < bound, (x.var(), var)


def check_ks(x, dist):
    assert stats.kstest(x, dist.cdf).pvalue > P_MIN


def check_chisquare(x, dist):
    """Chi-square goodness of fit on the integers, merging the tails until each bin expects >= 5."""
    x = x.astype(np.int64)
    n = x.size
    lo, hi = int(dist.ppf(1e-9)), int(dist.ppf(1 - 1e-9)) + 1
    ks = np.arange(lo, hi + 1)
    pmf = dist.pmf(ks)
    expected = list(n * pmf)
    observed = [np.sum(x == k) for k in ks]
    # Put everything outside [lo, hi] into the end bins, with their probabilities.
    observed[0] += np.sum(x < lo)
    observed[-1] += np.sum(x > hi)
    expected[0] += n * dist.cdf(lo - 1)
    expected[-1] += n * dist.sf(hi)
    obs, exp = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed, expected):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    exp = np.array(exp) * (n / np.sum(exp))
    assert stats.chisquare(obs, exp).pvalue > P_MIN


# ------------------------------------------------------------------------- continuous: KS+moments

# name -> (draw(key, n) -> samples, SciPy distribution, or None where moments are undefined)
CONTINUOUS = {
    "gamma_small_a": (lambda k, n: random.gamma(k, 0.5, (n,)), stats.gamma(0.5)),
    "gamma": (lambda k, n: random.gamma(k, 3.0, (n,)), stats.gamma(3.0)),
    "gamma_large_a": (lambda k, n: random.gamma(k, 40.0, (n,)), stats.gamma(40.0)),
    "loggamma": (lambda k, n: random.loggamma(k, 2.0, (n,)), stats.loggamma(2.0)),
    "loggamma_tiny_a": (lambda k, n: random.loggamma(k, 0.05, (n,)), stats.loggamma(0.05)),
    "beta": (lambda k, n: random.beta(k, 2.0, 3.0, (n,)), stats.beta(2.0, 3.0)),
    "beta_small": (lambda k, n: random.beta(k, 0.3, 0.7, (n,)), stats.beta(0.3, 0.7)),
    "chisquare": (lambda k, n: random.chisquare(k, 3.0, (n,)), stats.chi2(3.0)),
    "f": (lambda k, n: random.f(k, 3.0, 12.0, (n,)), stats.f(3.0, 12.0)),
    "t": (lambda k, n: random.t(k, 10.0, (n,)), stats.t(10.0)),
    "generalized_normal": (lambda k, n: random.generalized_normal(k, 1.5, (n,)), stats.gennorm(1.5)),
    "laplace": (lambda k, n: random.laplace(k, (n,)), stats.laplace()),
    "logistic": (lambda k, n: random.logistic(k, (n,)), stats.logistic()),
    "cauchy": (lambda k, n: random.cauchy(k, (n,)), stats.cauchy()),
    "pareto": (lambda k, n: random.pareto(k, 5.0, (n,)), stats.pareto(5.0)),
    "weibull_min": (lambda k, n: random.weibull_min(k, 2.0, 1.5, (n,)), stats.weibull_min(1.5, scale=2.0)),
    "rayleigh": (lambda k, n: random.rayleigh(k, 2.0, (n,)), stats.rayleigh(scale=2.0)),
    "maxwell": (lambda k, n: random.maxwell(k, (n,)), stats.maxwell()),
    "lognormal": (lambda k, n: random.lognormal(k, 0.5, (n,)), stats.lognorm(0.5)),
    "triangular": (lambda k, n: random.triangular(k, 0.0, 0.3, 1.0, (n,)), stats.triang(0.3)),
    "wald": (lambda k, n: random.wald(k, 1.5, (n,)), stats.invgauss(1.5)),
    "exponential": (lambda k, n: random.exponential(k, (n,)), stats.expon()),
    "gumbel": (lambda k, n: random.gumbel(k, (n,)), stats.gumbel_r()),
    "truncated_normal": (
        lambda k, n: random.truncated_normal(k, -1.0, 2.0, (n,)),
        stats.truncnorm(-1.0, 2.0),
    ),
    # Reductions to a known law: |X - loc| / scale is Maxwell; r**d of a uniform point in the
    # d-ball is U(0, 1); a Haar orthogonal matrix has (Q00 + 1) / 2 ~ Beta((n-1)/2, (n-1)/2); a
    # projection w.x of a multivariate normal is N(w.mu, w' S w).
    "double_sided_maxwell": (
        lambda k, n: jnp.abs(random.double_sided_maxwell(k, 1.0, 2.0, (n,)) - 1.0) / 2.0,
        stats.maxwell(),
    ),
    "ball_radius": (lambda k, n: jnp.sum(random.ball(k, 3, 2, (n,)) ** 2, -1) ** 1.5, stats.uniform()),
    "ball_l1_radius": (lambda k, n: jnp.sum(jnp.abs(random.ball(k, 2, 1, (n,))), -1) ** 2, stats.uniform()),
    "orthogonal_entry": (
        lambda k, n: (random.orthogonal(k, 5, (n // 10,))[:, 0, 0] + 1) / 2,
        stats.beta(2.0, 2.0),
    ),
    "dirichlet_marginal": (
        lambda k, n: random.dirichlet(k, jnp.array([0.5, 1.0, 2.0]), (n,))[:, 0],
        stats.beta(0.5, 3.0),
    ),
}

_COV = np.array([[2.0, 0.6, 0.2], [0.6, 1.0, -0.3], [0.2, -0.3, 0.5]], np.float32)
_MU = np.array([1.0, -2.0, 0.5], np.float32)
_W = np.array([0.3, -1.2, 0.8])
for _method in ("cholesky", "eigh", "svd"):
    CONTINUOUS[f"multivariate_normal_{_method}"] = (
        lambda k, n, m=_method: (
            random.multivariate_normal(k, _MU, _COV, (n,), method=m) @ _W.astype(np.float32)
        ),
        stats.norm(_W @ _MU, np.sqrt(_W @ _COV @ _W)),
    )

HEAVY_TAILED = {"cauchy"}  # no finite moments to compare


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_ks_and_moments(name, mode):
    draw, dist = CONTINUOUS[name]
    key = random.PRNGKey(11)
    x = _np(draw(key, N))
    assert np.isfinite(x).all()
    check_ks(x, dist)
    if name not in HEAVY_TAILED:
        mean, var, _, kurt = (float(v) for v in dist.stats(moments="mvsk"))
        check_moments(x, mean, var, kurt)


def test_dirichlet_rows_on_simplex():
    x = _np(random.dirichlet(random.PRNGKey(0), jnp.array([0.2, 1.0, 5.0, 0.05]), (1000,)))
    assert x.shape == (1000, 4)
    assert (x >= 0).all() and np.allclose(x.sum(-1), 1.0, atol=1e-5)


def test_ball_inside_and_orthogonal_is_orthogonal():
    b = _np(random.ball(random.PRNGKey(1), 4, 3, (500,)))
    assert b.shape == (500, 4) and (np.sum(np.abs(b) ** 3, -1) <= 1 + 1e-6).all()
    for n, m in [(4, 4), (5, 3), (3, 5)]:
        q = _np(random.orthogonal(random.PRNGKey(2), n, (7,), m=m))
        assert q.shape == (7, n, m)
        gram = q.swapaxes(-1, -2) @ q if n >= m else q @ q.swapaxes(-1, -2)
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(min(n, m)), gram.shape), atol=1e-5)


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_covariance(method):
    x = _np(random.multivariate_normal(random.PRNGKey(4), _MU, _COV, (N,), method=method))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.mean(0), _MU, atol=Z * np.sqrt(np.diag(_COV).max() / N))
    # Entry (i, j) of the sample covariance has standard error about sqrt((S_ii S_jj + S_ij^2) / N).
    se = np.sqrt((np.outer(np.diag(_COV), np.diag(_COV)) + _COV**2) / N)
    assert (np.abs(np.cov(x.T) - _COV) < Z * se).all()


def test_multivariate_normal_singular_covariance():
    cov = np.array([[1.0, 1.0], [1.0, 1.0]], np.float32)
    for method in ("eigh", "svd"):
        x = _np(
            random.multivariate_normal(
                random.PRNGKey(5), np.zeros(2, np.float32), cov, (2000,), method=method
            )
        )
        np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-3)
        assert abs(x[:, 0].var() - 1.0) < Z * np.sqrt(2 / 2000)


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_under_rank_promotion_raise_as_jax(method):
    # JAX 0.10.2 broadcasts `mean` against the samples inside the sampler with rank promotion
    # allowed, so this gives shape (4, 3) under "raise" (diffrax's tests set it).
    with morphax.numpy_rank_promotion("raise"):
        x = random.multivariate_normal(random.PRNGKey(4), _MU, _COV, (4,), method=method)
        assert x.shape == (4, 3)
        with pytest.raises(ValueError, match="rank"):
            jnp.ones((4, 3)) + jnp.ones(3)


def test_double_sided_maxwell_symmetric():
    x = _np(random.double_sided_maxwell(random.PRNGKey(6), 0.0, 1.0, (N,)))
    assert abs(np.mean(x > 0) - 0.5) < Z * np.sqrt(0.25 / N)


# ------------------------------------------------------------------------------- discrete: chi2

DISCRETE = {
    "poisson_knuth": (lambda k, n: random.poisson(k, 3.0, (n,)), stats.poisson(3.0)),
    "poisson_rejection": (lambda k, n: random.poisson(k, 50.0, (n,)), stats.poisson(50.0)),
    "poisson_huge": (lambda k, n: random.poisson(k, 5000.0, (n,)), stats.poisson(5000.0)),
    "binomial_inversion": (lambda k, n: random.binomial(k, 20.0, 0.2, (n,)), stats.binom(20, 0.2)),
    "binomial_btrs": (lambda k, n: random.binomial(k, 200.0, 0.3, (n,)), stats.binom(200, 0.3)),
    "binomial_flipped": (lambda k, n: random.binomial(k, 200.0, 0.9, (n,)), stats.binom(200, 0.9)),
    "binomial_flipped_inv": (lambda k, n: random.binomial(k, 8.0, 0.75, (n,)), stats.binom(8, 0.75)),
    "geometric": (lambda k, n: random.geometric(k, 0.3, (n,)), stats.geom(0.3)),
    "multinomial_marginal": (
        lambda k, n: random.multinomial(k, 10.0, jnp.array([0.2, 0.3, 0.5]), shape=(n, 3))[:, 1],
        stats.binom(10, 0.3),
    ),
    "rademacher": (lambda k, n: (random.rademacher(k, (n,)) + 1) // 2, stats.bernoulli(0.5)),
    "categorical_no_replace_first": (
        lambda k, n: morphax.vmap(
            lambda kk: random.categorical(
                kk, jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4])), shape=(2,), replace=False
            )[0]
        )(random.split(k, n)),
        stats.rv_discrete(values=([0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4])),
    ),
}


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_chisquare_and_moments(name, mode):
    draw, dist = DISCRETE[name]
    x = _np(draw(random.PRNGKey(12), N))
    assert (x == np.round(x)).all()
    check_chisquare(x, dist)
    mean, var, _, kurt = (float(v) for v in dist.stats(moments="mvsk"))
    check_moments(x, mean, var, kurt)


def test_multinomial_counts_sum_to_n():
    p = jnp.array([[0.1, 0.0, 0.9], [0.3, 0.3, 0.4]])
    x = _np(random.multinomial(random.PRNGKey(3), jnp.array([7.0, 100.0]), p, shape=(50, 2, 3)))
    assert x.shape == (50, 2, 3) and (x >= 0).all()
    np.testing.assert_array_equal(x.sum(-1), np.broadcast_to([7.0, 100.0], (50, 2)))
    assert (x[:, 0, 1] == 0).all()


def test_categorical_without_replacement_distinct():
    logits = jnp.zeros((3, 6))
    x = np.asarray(random.categorical(random.PRNGKey(0), logits, axis=-1, shape=(6, 3), replace=False))
    assert x.shape == (6, 3)
    for col in x.T:
        assert sorted(col) == list(range(6))


def test_edge_parameters():
    k = random.PRNGKey(0)
    np.testing.assert_array_equal(np.asarray(random.poisson(k, 0.0, (5,))), 0)
    np.testing.assert_array_equal(np.asarray(random.binomial(k, 10.0, 0.0, (3,))), 0)
    np.testing.assert_array_equal(np.asarray(random.binomial(k, 10.0, 1.0, (3,))), 10)
    assert np.isnan(np.asarray(random.binomial(k, -1.0, 0.5))).all()
    assert np.isnan(np.asarray(random.binomial(k, 5.0, np.nan))).all()
    assert np.isinf(np.asarray(random.binomial(k, np.inf, 0.5))).all()
    # Gamma with a tiny shape underflows to 0 in linear space but not in log space.
    g = np.asarray(random.gamma(k, 1e-3, (100,)))
    lg = np.asarray(random.loggamma(k, 1e-3, (100,)))
    assert (g >= 0).all() and np.isfinite(lg).all() and (lg < -10).mean() > 0.5


# ------------------------------------------------------------------------- shapes and dtypes

# name -> (call(key, shape, dtype), parameter broadcast shape, kind of default dtype)
SHAPED = {
    "gamma": (lambda k, s, d: random.gamma(k, jnp.ones(3), s, d), "f"),
    "loggamma": (lambda k, s, d: random.loggamma(k, jnp.ones(3), s, d), "f"),
    "beta": (lambda k, s, d: random.beta(k, jnp.ones(3), 2.0, s, d), "f"),
    "chisquare": (lambda k, s, d: random.chisquare(k, jnp.ones(3), s, d), "f"),
    "f": (lambda k, s, d: random.f(k, jnp.ones(3), 3.0, s, d), "f"),
    "t": (lambda k, s, d: random.t(k, jnp.ones(3), s, d), "f"),
    "pareto": (lambda k, s, d: random.pareto(k, jnp.ones(3), s, d), "f"),
    "rayleigh": (lambda k, s, d: random.rayleigh(k, jnp.ones(3), s, d), "f"),
    "lognormal": (lambda k, s, d: random.lognormal(k, jnp.ones(3), s, d), "f"),
    "triangular": (lambda k, s, d: random.triangular(k, 0.0, jnp.full(3, 0.5), 1.0, s, d), "f"),
    "wald": (lambda k, s, d: random.wald(k, jnp.ones(3), s, d), "f"),
    "binomial": (lambda k, s, d: random.binomial(k, jnp.full(3, 5.0), 0.5, s, d), "f"),
    "poisson": (lambda k, s, d: random.poisson(k, jnp.ones(3), s, d), "i"),
    "geometric": (lambda k, s, d: random.geometric(k, jnp.full(3, 0.5), s, d), "i"),
}


@pytest.mark.parametrize("name", sorted(SHAPED))
def test_parameter_shapes_and_dtypes(name):
    call, kind = SHAPED[name]
    k = random.PRNGKey(0)
    default = np.float32 if kind == "f" else np.int32
    x = call(k, None, None)
    assert x.shape == (3,) and x.dtype == default
    x = call(k, (4, 3), None)
    assert x.shape == (4, 3) and x.dtype == default
    with pytest.raises(ValueError, match="broadcast"):
        call(k, (4,), None)
    other = np.float16 if kind == "f" else np.int16
    assert call(k, (2, 3), other).dtype == other


def test_no_parameter_samplers_shapes_and_dtypes(x64):
    k = random.PRNGKey(0)
    for fn in (random.laplace, random.logistic, random.cauchy, random.maxwell):
        assert fn(k).shape == () and fn(k).dtype == np.float64
        assert fn(k, (2, 3), np.float32).dtype == np.float32 and fn(k, (2, 3)).shape == (2, 3)
    assert random.gamma(k, 2.0).dtype == np.float64
    assert random.poisson(k, 2.0).dtype == np.int64
    assert random.poisson(k, 2.0, (2,), np.int32).dtype == np.int32
    assert random.binomial(k, 5.0, 0.5).dtype == np.float64
    assert random.ball(k, 3).shape == (3,)
    assert random.ball(k, 3, 2, (4,)).shape == (4, 3)
    assert random.orthogonal(k, 3).shape == (3, 3)
    assert random.dirichlet(k, jnp.ones(4)).shape == (4,)
    assert random.dirichlet(k, jnp.ones((2, 4)), (5, 2)).shape == (5, 2, 4)
    assert random.multivariate_normal(k, jnp.zeros(3), jnp.eye(3)).shape == (3,)
    assert random.multivariate_normal(k, jnp.zeros(3), jnp.eye(3), (2,)).shape == (2, 3)
    assert random.multinomial(k, 5.0, jnp.ones(3) / 3).shape == (3,)
    assert random.weibull_min(k, 1.0, 2.0, (2,)).shape == (2,)
    assert random.generalized_normal(k, 2.0, (2,)).shape == (2,)
    # As JAX: the result shape is (shape or param_shape) + param_shape.
    assert random.double_sided_maxwell(k, jnp.zeros(2), 1.0).shape == (2, 2)
    assert random.double_sided_maxwell(k, 0.0, 1.0, (4,)).shape == (4,)


def test_errors():
    k = random.PRNGKey(0)
    with pytest.raises(ValueError, match="float"):
        random.gamma(k, 1.0, dtype=np.int32)
    with pytest.raises(ValueError, match="int"):
        random.poisson(k, 1.0, dtype=np.float32)
    with pytest.raises(ValueError, match="method"):
        random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2), method="qr")
    with pytest.raises(ValueError, match="cov.shape"):
        random.multivariate_normal(k, jnp.zeros(2), jnp.eye(3))
    with pytest.raises(ValueError, match="alpha.ndim"):
        random.dirichlet(k, 1.0)
    with pytest.raises(TypeError, match="PRNG key"):
        random.gamma(jnp.zeros(2), 1.0)


# -------------------------------------------------------------------- eager == jit == vmap

# Every sampler with fixed parameters, as a function of the key alone.
ALL = {
    "gamma": lambda k: random.gamma(k, jnp.array([0.3, 1.0, 4.0]), (2, 3)),
    "loggamma": lambda k: random.loggamma(k, 0.5, (3,)),
    "beta": lambda k: random.beta(k, 0.5, 2.0, (3,)),
    "dirichlet": lambda k: random.dirichlet(k, jnp.array([0.5, 2.0]), (2,)),
    "chisquare": lambda k: random.chisquare(k, 2.0, (3,)),
    "f": lambda k: random.f(k, 2.0, 5.0, (3,)),
    "t": lambda k: random.t(k, 3.0, (3,)),
    "generalized_normal": lambda k: random.generalized_normal(k, 0.8, (3,)),
    "ball": lambda k: random.ball(k, 3, 1.5, (2,)),
    "poisson": lambda k: random.poisson(k, jnp.array([0.5, 5.0, 30.0, 1e4]), (2, 4)),
    "binomial": lambda k: random.binomial(k, jnp.array([3.0, 40.0, 500.0]), jnp.array([0.2, 0.5, 0.95])),
    "multinomial": lambda k: random.multinomial(k, 20.0, jnp.array([0.1, 0.6, 0.3])),
    "geometric": lambda k: random.geometric(k, 0.2, (3,)),
    "pareto": lambda k: random.pareto(k, 2.0, (3,)),
    "weibull_min": lambda k: random.weibull_min(k, 1.0, 0.7, (3,)),
    "rayleigh": lambda k: random.rayleigh(k, 1.0, (3,)),
    "maxwell": lambda k: random.maxwell(k, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (3,)),
    "lognormal": lambda k: random.lognormal(k, 0.5, (3,)),
    "triangular": lambda k: random.triangular(k, -1.0, 0.0, 2.0, (3,)),
    "wald": lambda k: random.wald(k, 2.0, (3,)),
    "laplace": lambda k: random.laplace(k, (3,)),
    "logistic": lambda k: random.logistic(k, (3,)),
    "cauchy": lambda k: random.cauchy(k, (3,)),
    "orthogonal": lambda k: random.orthogonal(k, 3),
    "multivariate_normal": lambda k: random.multivariate_normal(
        k, jnp.zeros(2), jnp.array([[2.0, 0.5], [0.5, 1.0]])
    ),
    "rademacher": lambda k: random.rademacher(k, (3,)),
    "categorical_no_replace": lambda k: random.categorical(k, jnp.zeros(5), shape=(3,), replace=False),
}


@pytest.mark.parametrize("name", sorted(ALL))
def test_same_bits_eager_jit_vmap(name, mode):
    fn = ALL[name]
    keys = random.split(random.PRNGKey(21), 3)
    eager = [np.asarray(fn(keys[i])) for i in range(3)]
    jitted = morphax.jit(fn)
    batched = np.asarray(morphax.vmap(fn)(keys))
    for i in range(3):
        got = np.asarray(jitted(keys[i]))
        if got.dtype.kind == "f" and (
            morphax._src.compiler.backends.default_backend_name() == "c" or morphax.default_backend() != "cpu"
        ):
            # NB: eager runs NumPy's math functions and jit the native backend's, which agree to
            # a few ulp (tests/compiler/test_cmath.py), amplified by the samplers' log-space
            # arithmetic to ~30 ulp; integer and boolean results stay exact. On a device platform
            # eager runs one XLA program per operation and jit one fused program, which XLA may
            # round differently by an ulp.
            np.testing.assert_allclose(got, eager[i], rtol=2e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, eager[i])
        np.testing.assert_array_equal(batched[i], eager[i])


# --------------------------------------------------------------------------- JAX as the oracle

# Every sampler, with the arguments given to both libraries. Only the key differs.
ORACLE = {
    "gamma": ("gamma", (np.array([0.1, 0.5, 1.0, 2.5, 10.0, 100.0], np.float32), (300, 6))),
    "loggamma": ("loggamma", (np.array([0.01, 0.5, 3.0], np.float32), (300, 3))),
    "beta": ("beta", (0.5, 2.0, (1000,))),
    "dirichlet": ("dirichlet", (np.array([0.5, 1.0, 3.0], np.float32), (300,))),
    "chisquare": ("chisquare", (3.0, (1000,))),
    "f": ("f", (3.0, 7.0, (1000,))),
    "t": ("t", (4.0, (1000,))),
    "generalized_normal": ("generalized_normal", (1.5, (1000,))),
    "ball": ("ball", (3, 2, (300,))),
    "poisson": ("poisson", (np.array([0.0, 0.3, 4.0, 9.99, 10.0, 70.0, 300.0], np.float32), (300, 7))),
    "binomial": (
        "binomial",
        (
            np.array([1.0, 7.0, 30.0, 300.0], np.float32),
            np.array([0.05, 0.4, 0.5, 0.93], np.float32),
            (300, 4),
        ),
    ),
    "multinomial": (
        "multinomial",
        (np.float32(40.0), np.array([0.1, 0.2, 0.3, 0.4], np.float32)),
        {"shape": (200, 4)},
    ),
    "geometric": ("geometric", (0.2, (1000,))),
    "normal": ("normal", ((20_000,),)),
    "pareto": ("pareto", (3.0, (1000,))),
    "weibull_min": ("weibull_min", (2.0, 1.5, (1000,))),
    "rayleigh": ("rayleigh", (2.0, (1000,))),
    "maxwell": ("maxwell", ((1000,),)),
    "double_sided_maxwell": ("double_sided_maxwell", (1.0, 2.0, (1000,))),
    "lognormal": ("lognormal", (0.5, (1000,))),
    "triangular": ("triangular", (0.0, 0.3, 1.0, (1000,))),
    "wald": ("wald", (1.5, (1000,))),
    "laplace": ("laplace", ((1000,),)),
    "logistic": ("logistic", ((1000,),)),
    "cauchy": ("cauchy", ((1000,),)),
    "rademacher": ("rademacher", ((1000,),)),
    "orthogonal": ("orthogonal", (4, (50,))),
    "orthogonal_wide": ("orthogonal", (3, (50,)), {"m": 5}),
    "mvn_cholesky": ("multivariate_normal", (_MU, _COV, (300,)), {"method": "cholesky"}),
    "mvn_eigh": ("multivariate_normal", (_MU, _COV, (300,)), {"method": "eigh"}),
    "mvn_svd": ("multivariate_normal", (_MU, _COV, (300,)), {"method": "svd"}),
    "categorical_no_replace": (
        "categorical",
        (np.log(np.arange(1, 9, dtype=np.float32)),),
        {"shape": (5,), "replace": False},
    ),
}

# Bit-exact with JAX 0.10.2 on CPU: the algorithm is JAX's step for step, and either every
# operation involved rounds as XLA does (uniform bits, sqrt, tan, pow, arithmetic, and erf_inv,
# whose log1p is computed in XLA's operation order) or the float result is floored to an integer
# before any remaining 1-ulp difference can show.
BIT_EXACT = {
    "normal",
    "poisson",
    "binomial",
    "multinomial",
    "geometric",
    "triangular",
    "cauchy",
    "rademacher",
    "categorical_no_replace",
}
# Exception: for rates of ~1e3 and up, poisson's acceptance test compares against lgamma(k + 1)
# where morphax's and XLA's lgamma differ in the last bits. One flipped test can change how many
# rounds the loop runs, and (as in JAX) every round that accepts overwrites earlier draws, so then
# many draws differ: at rate 1e5, 99% agree for 300 draws but 13% for 2000.
# The rest run JAX's algorithm too, but go through log / log1p / exp, where morphax's float32
# kernels (NumPy's, nearly correctly rounded) differ from XLA's Cephes polynomials by up to ~4 ulp
# (XLA's order is reproduced only inside erf_inv: it is ~6-25x slower than NumPy's); gamma's
# rejection tests could in principle flip on such a difference (none do at these keys). The
# linear-algebra samplers also differ by the LAPACK/BLAS build behind QR, eigh and svd.
RTOL = {"orthogonal": 1e-3, "orthogonal_wide": 1e-4, "mvn_eigh": 1e-4, "mvn_svd": 1e-4}
DEFAULT_RTOL = 2e-5  # relative to max(|x|, 1): wald and double_sided_maxwell cancel near 0


# XLA takes ~10 s to compile each loop-based sampler, so those are compared in the default
# (partitionable) threefry mode only, plus poisson in both; key layout is the same code for all.
_SLOW = {"gamma", "loggamma", "beta", "dirichlet", "chisquare", "f", "t", "generalized_normal", "ball"}
_SLOW |= {"binomial", "multinomial"}


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_matches_jax(name, mode):
    jax = pytest.importorskip("jax")
    if not mode and name in _SLOW:
        pytest.skip("slow to compile in JAX; compared in the partitionable mode")
    fn_name, args, *kw = ORACLE[name]
    kw = kw[0] if kw else {}
    old = jax.config.jax_threefry_partitionable
    jax.config.update("jax_threefry_partitionable", mode)
    try:
        expected = np.asarray(getattr(jax.random, fn_name)(jax.random.PRNGKey(0), *args, **kw))
    finally:
        jax.config.update("jax_threefry_partitionable", old)
    got = np.asarray(getattr(random, fn_name)(random.PRNGKey(0), *args, **kw))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if name in BIT_EXACT:
        np.testing.assert_array_equal(got, expected)
    else:
        scale = np.maximum(np.abs(expected.astype(np.float64)), 1.0)
        assert np.max(np.abs(got - expected) / scale) < RTOL.get(name, DEFAULT_RTOL)


# ------------------------------------------------------------------------------------- gradients


def test_grad_normal_location_scale():
    key = random.PRNGKey(3)

    def f(mu, sigma):
        return jnp.sum(random.normal(key, (100,)) * sigma + mu)

    g_mu, g_sigma = morphax.grad(f, argnums=(0, 1))(1.5, 0.7)
    z = np.asarray(random.normal(key, (100,)), np.float64)
    assert float(g_mu) == pytest.approx(100.0)
    assert float(g_sigma) == pytest.approx(z.sum(), rel=1e-5)
    h = 1e-2  # f is linear in mu and sigma, so the central difference is exact up to rounding
    fd_mu = (float(f(1.5 + h, 0.7)) - float(f(1.5 - h, 0.7))) / (2 * h)
    fd_sigma = (float(f(1.5, 0.7 + h)) - float(f(1.5, 0.7 - h))) / (2 * h)
    assert float(g_mu) == pytest.approx(fd_mu, rel=1e-3)
    assert float(g_sigma) == pytest.approx(fd_sigma, rel=1e-3, abs=1e-2)
    # Per element too, with vmap over keys and jit.
    keys = random.split(key, 4)
    per = morphax.jit(morphax.vmap(morphax.grad(lambda s, k: random.normal(k) * s + 1.0), in_axes=(None, 0)))(
        2.0, keys
    )
    np.testing.assert_allclose(np.asarray(per), np.asarray(morphax.vmap(random.normal)(keys)), rtol=1e-6)


_A = np.array([0.05, 0.3, 0.9, 1.0, 1.7, 4.0, 25.0, 300.0])


def test_gamma_grad_is_implicit_reparameterization(x64):
    """d sample / d a at a fixed key is the derivative of the quantile function at the sample's
    quantile: (F^-1)'(u; a) with u = F(sample; a). Checked against a central difference of
    SciPy's gammaincinv in float64."""
    a = jnp.array(np.repeat(_A, 20))
    s = np.asarray(random.gamma(random.PRNGKey(8), a))
    grads = np.asarray(morphax.jacfwd(lambda a: random.gamma(random.PRNGKey(8), a))(a)).diagonal()
    grads_rev = np.asarray(morphax.grad(lambda a: jnp.sum(random.gamma(random.PRNGKey(8), a)))(a))
    np.testing.assert_allclose(grads_rev, grads, rtol=1e-12)
    an = np.asarray(a)
    u = special.gammainc(an, s)
    h = 1e-6 * an
    fd = (special.gammaincinv(an + h, u) - special.gammaincinv(an - h, u)) / (2 * h)
    ok = s > 1e-280  # tiny-a samples that underflow have no usable quantile
    np.testing.assert_allclose(grads[ok], fd[ok], rtol=1e-5)
    # loggamma's gradient is d log(x) / d a = (dx / da) / x.
    lg = np.asarray(morphax.grad(lambda a: jnp.sum(random.loggamma(random.PRNGKey(8), a)))(a))
    ls = np.asarray(random.loggamma(random.PRNGKey(8), a))
    fd_log = fd / np.exp(ls)
    ok = np.exp(ls) > 1e-280
    np.testing.assert_allclose(lg[ok], fd_log[ok], rtol=1e-5)


@pytest.mark.parametrize("a0", [0.5, 2.0, 7.0])
def test_gamma_grad_matches_finite_differences_of_the_sampler(a0, x64):
    """Marsaglia-Tsang is not the inverse CDF, so one draw's finite difference in `a` at a fixed
    key is not its implicit gradient (they differ by a few percent per draw, their expectations
    agree). Averaged over 20,000 draws, the sampler's central difference and the mean gradient
    both estimate d E[X] / da = 1; they must agree to 2% and lie within 5 standard errors of 1."""
    key = random.PRNGKey(7)

    def mean_sample(a):
        return jnp.mean(random.gamma(key, a, (N,)))

    g = float(morphax.grad(mean_sample)(a0))
    h = 1e-5
    fd = (float(mean_sample(a0 + h)) - float(mean_sample(a0 - h))) / (2 * h)
    assert abs(g - fd) < 0.02
    per_draw = np.asarray(
        morphax.vmap(morphax.grad(lambda a, k: random.gamma(k, a)), in_axes=(None, 0))(
            a0, random.split(key, 2000)
        )
    )
    assert abs(g - 1.0) < Z * per_draw.std() / np.sqrt(N)


def test_gamma_grad_float32_close_to_float64():
    """In float32 (x64 off) the gradient loses only float32 rounding: within 1e-3 relative of the
    float64 implicit gradient at the same samples, computed with SciPy."""
    a = np.repeat(_A[1:], 10).astype(np.float32)
    s = np.asarray(random.gamma(random.PRNGKey(9), a), np.float64)
    g = np.asarray(morphax.grad(lambda a: jnp.sum(random.gamma(random.PRNGKey(9), a)))(a), np.float64)
    a64 = a.astype(np.float64)
    u = special.gammainc(a64, s)
    h = 1e-6 * a64
    fd = (special.gammaincinv(a64 + h, u) - special.gammaincinv(a64 - h, u)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-3, atol=1e-6)


def test_gamma_grad_matches_jax():
    """Per-draw gradients against JAX's, skipping loggamma draws whose exp is subnormal in float32:
    XLA flushes those to zero (then JAX evaluates the gradient at `tiny`), morphax keeps them and is
    the more accurate there (checked against SciPy in float64 while writing this test)."""
    jax = pytest.importorskip("jax")
    a = np.broadcast_to(_A.astype(np.float32), (30, len(_A))).copy()
    for name in ("gamma", "loggamma"):
        ours, theirs = getattr(random, name), getattr(jax.random, name)
        got = np.asarray(morphax.grad(lambda a, f=ours: jnp.sum(f(random.PRNGKey(0), a)))(a))
        want = np.asarray(jax.grad(lambda a, f=theirs: f(jax.random.PRNGKey(0), a).sum())(a))
        x = (
            np.asarray(random.gamma(random.PRNGKey(0), a))
            if name == "gamma"
            else np.exp(ours(random.PRNGKey(0), a))
        )
        normal = np.asarray(x) >= np.finfo(np.float32).tiny
        assert normal.mean() > 0.9
        np.testing.assert_allclose(got[normal], want[normal], rtol=1e-4)


def test_grad_through_gamma_family_is_finite():
    k = random.PRNGKey(1)
    for fn in (
        lambda a: random.beta(k, a, 2.0, (10,)),
        lambda a: random.dirichlet(k, jnp.stack([a, 2.0 * a, 1.0])),
        lambda a: random.chisquare(k, a, (10,)),
        lambda a: random.t(k, a, (10,)),
        lambda a: random.f(k, a, 3.0, (10,)),
    ):
        g = morphax.grad(lambda a, fn=fn: jnp.sum(fn(a)))(1.5)
        assert np.isfinite(float(g))
