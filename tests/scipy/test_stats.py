"""`morphax.scipy.stats` against `scipy.stats`: every function on random arguments over its domain
(and outside the support), float32 and float64; derivatives of the log densities (check_grads);
jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sst

import morphax
from morphax.scipy import stats
from morphax.test_util import check_grads

# distribution -> (scipy distribution, argument domains after x: shapes then loc, scale)
CONTINUOUS = {
    "norm": (sst.norm, [], (-8, 8), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "expon": (sst.expon, [], (-1, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gamma": (sst.gamma, [(0.5, 4)], (-1, 8), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "beta": (sst.beta, [(0.5, 4), (0.5, 4)], (-0.2, 1.2), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "chi2": (sst.chi2, [(1, 6)], (-1, 10), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "t": (sst.t, [(1, 8)], (-6, 6), ["logpdf", "pdf"]),
    "cauchy": (sst.cauchy, [], (-6, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "laplace": (sst.laplace, [], (-6, 6), ["logpdf", "pdf", "cdf"]),
    "logistic": (sst.logistic, [], (-6, 6), ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]),
    "uniform": (sst.uniform, [], (-1, 3), ["logpdf", "pdf", "cdf", "ppf"]),
    "pareto": (sst.pareto, [(0.5, 4)], (0.5, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gumbel_r": (sst.gumbel_r, [], (-3, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gumbel_l": (sst.gumbel_l, [], (-6, 3), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
}
DISCRETE = {
    "bernoulli": (sst.bernoulli, [(0.05, 0.95)], (-1, 2), ["logpmf", "pmf"]),
    "binom": (sst.binom, [(1, 12), (0.05, 0.95)], (-1, 13), ["logpmf", "pmf"]),
    "poisson": (sst.poisson, [(0.5, 8)], (-1, 15), ["logpmf", "pmf", "cdf"]),
    "geom": (sst.geom, [(0.05, 0.95)], (-1, 10), ["logpmf", "pmf"]),
    "nbinom": (sst.nbinom, [(1, 8), (0.1, 0.9)], (-1, 15), ["logpmf", "pmf"]),
    "betabinom": (sst.betabinom, [(1, 12), (0.5, 4), (0.5, 4)], (-1, 13), ["logpmf", "pmf"]),
}
_CASES = [(d, f, True) for d, c in CONTINUOUS.items() for f in c[3]] + [
    (d, f, False) for d, c in DISCRETE.items() for f in c[3]
]


def _draw(name, fn, continuous, dtype, n=30, seed=0):
    ref, shapes, x_domain, _ = (CONTINUOUS if continuous else DISCRETE)[name]
    rng = np.random.default_rng(seed)
    if fn in ("ppf", "isf"):
        x = rng.uniform(0.01, 0.99, n)
    elif continuous:
        x = rng.uniform(*x_domain, n)
    else:
        x = rng.integers(*x_domain, n).astype(np.float64)
    params = [rng.uniform(lo, hi, n) for lo, hi in shapes]
    if name in ("binom", "betabinom"):
        params[0] = np.round(params[0])
    extra = [rng.uniform(-1, 1, n), rng.uniform(0.5, 2, n)] if continuous else [np.zeros(n)]
    if name == "uniform":
        extra[1] = rng.uniform(1, 3, n)
    return ref, [a.astype(dtype) for a in (x, *params, *extra)]


@pytest.mark.parametrize("name, fn, continuous", _CASES, ids=[f"{d}.{f}" for d, f, _ in _CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_scipy(name, fn, continuous, dtype):
    ref, args = _draw(name, fn, continuous, dtype)
    want = getattr(ref, fn)(*[a.astype(np.float64) for a in args])
    with morphax.enable_x64(dtype == np.float64):
        got = getattr(getattr(stats, name), fn)(*args)
    assert got.dtype == dtype
    rtol, atol = (2e-4, 1e-6) if dtype == np.float32 else (1e-8, 1e-12)
    if name == "betabinom" and dtype == np.float64:
        rtol = 1e-6  # betaln's large-argument correction (JAX's algorithm) is good to ~1e-7
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_log_density_derivatives(name):
    _, args = _draw(name, "logpdf", True, np.float64, n=3, seed=1)
    # keep x inside the support, where the density is smooth
    ref = CONTINUOUS[name][0]
    inside = np.isfinite(ref.logpdf(*args))
    args = [a[inside] for a in args]
    if not len(args[0]):
        pytest.skip("no draw inside the support")
    with morphax.enable_x64():
        check_grads(getattr(stats, name).logpdf, args, order=1, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name, fn, continuous", _CASES[::3], ids=[f"{d}.{f}" for d, f, _ in _CASES[::3]])
def test_jit_and_vmap(name, fn, continuous):
    _, args = _draw(name, fn, continuous, np.float32, n=6, seed=2)
    f = getattr(getattr(stats, name), fn)
    eager = np.asarray(f(*args))
    np.testing.assert_allclose(np.asarray(morphax.jit(f)(*args)), eager, rtol=1e-6, atol=1e-7)
    mapped = morphax.vmap(f)(*[a.reshape(2, 3) for a in args])
    np.testing.assert_allclose(np.asarray(mapped).ravel(), eager, rtol=1e-6, atol=1e-7)


def test_poisson_entropy_and_edges():
    mu = np.array([0.0, 0.5, 3.0, 25.0, 250.0])
    with morphax.enable_x64():
        np.testing.assert_allclose(
            np.asarray(stats.poisson.entropy(mu)), sst.poisson.entropy(mu), rtol=1e-6, atol=1e-12
        )
    assert np.isnan(float(stats.beta.logpdf(0.5, -1.0, 2.0)))
    assert float(stats.expon.logpdf(-1.0)) == -np.inf
    assert np.isnan(float(stats.expon.ppf(1.5)))
    assert float(stats.poisson.logpmf(2.5, 3.0)) == -np.inf  # not an integer


def test_multivariate_and_circular_distributions():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3))
    cov, mean, x = a @ a.T + np.eye(3), rng.normal(size=3), rng.normal(size=(4, 3))
    with morphax.enable_x64():
        mvn = stats.multivariate_normal
        np.testing.assert_allclose(
            np.asarray(mvn.logpdf(x, mean, cov)), sst.multivariate_normal.logpdf(x, mean, cov), rtol=1e-10
        )
        np.testing.assert_allclose(
            np.asarray(mvn.pdf(x, mean, 2.0)),
            sst.multivariate_normal.pdf(x, mean, 2.0 * np.eye(3)),
            rtol=1e-10,
        )
        np.testing.assert_allclose(
            float(mvn.logpdf(0.3, 0.1, 2.0)), sst.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), rtol=1e-12
        )
        batch = np.stack([cov, 2 * cov])
        np.testing.assert_allclose(
            np.asarray(mvn.logpdf(x[:2], mean, batch)),
            [
                sst.multivariate_normal.logpdf(x[0], mean, cov),
                sst.multivariate_normal.logpdf(x[1], mean, 2 * cov),
            ],
            rtol=1e-10,
        )
        check_grads(lambda m: mvn.logpdf(x, m, cov), (mean,), order=2)
        alpha, point = np.array([1.5, 2.0, 3.0]), np.array([0.2, 0.3, 0.5])
        np.testing.assert_allclose(
            float(stats.dirichlet.logpdf(point, alpha)), sst.dirichlet.logpdf(point, alpha), rtol=1e-12
        )
        np.testing.assert_allclose(
            float(stats.dirichlet.pdf(point[:2], alpha)), sst.dirichlet.pdf(point, alpha), rtol=1e-12
        )
        assert float(stats.dirichlet.logpdf(np.array([0.5, 0.6, -0.1]), alpha)) == -np.inf
        counts, probs = np.array([2, 3, 5]), np.array([0.2, 0.3, 0.5])
        np.testing.assert_allclose(
            float(stats.multinomial.logpmf(counts, 10, probs)),
            sst.multinomial.logpmf(counts, 10, probs),
            rtol=1e-12,
        )
        assert float(stats.multinomial.pmf(counts, 11, probs)) == 0.0
        angles = rng.uniform(0, 2 * np.pi, 8)
        np.testing.assert_allclose(
            np.asarray(stats.vonmises.logpdf(angles, 2.5)), sst.vonmises.logpdf(angles, 2.5), rtol=1e-10
        )
        np.testing.assert_allclose(
            np.asarray(stats.wrapcauchy.pdf(angles, 0.4)), sst.wrapcauchy.pdf(angles, 0.4), rtol=1e-10
        )
        v = rng.uniform(-3, 3, 8)
        np.testing.assert_allclose(
            np.asarray(stats.gennorm.logpdf(v, 1.5)), sst.gennorm.logpdf(v, 1.5), rtol=1e-10
        )
        np.testing.assert_allclose(np.asarray(stats.gennorm.cdf(v, 1.5)), sst.gennorm.cdf(v, 1.5), rtol=1e-10)
    with pytest.raises(ValueError, match="integer type"):
        stats.multinomial.logpmf(np.array([1.0, 2.0]), 3, np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="one-dimensional"):
        stats.dirichlet.logpdf(np.ones((3, 2)) / 3, np.ones((3, 1)))


@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"])
def test_truncnorm(fn):
    rng = np.random.default_rng(4)
    x, a, b = rng.uniform(-3, 3, 30), rng.uniform(-2, 0, 30), rng.uniform(0.1, 2.5, 30)
    loc, scale = rng.uniform(-1, 1, 30), rng.uniform(0.5, 2, 30)
    want = getattr(sst.truncnorm, fn)(x, a, b, loc, scale)
    with morphax.enable_x64():
        got = getattr(stats.truncnorm, fn)(x, a, b, loc, scale)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-14)
    got32 = getattr(stats.truncnorm, fn)(*(v.astype(np.float32) for v in (x, a, b, loc, scale)))
    np.testing.assert_allclose(np.asarray(got32, np.float64), want, rtol=5e-4, atol=1e-5)


def test_truncnorm_far_tail_and_invalid_bounds():
    with morphax.enable_x64():
        np.testing.assert_allclose(
            float(stats.truncnorm.logpdf(9.0, 8.0, 10.0)), sst.truncnorm.logpdf(9.0, 8.0, 10.0), rtol=1e-12
        )
        np.testing.assert_allclose(
            float(stats.truncnorm.logcdf(-9.0, -10.0, -8.0)),
            sst.truncnorm.logcdf(-9.0, -10.0, -8.0),
            rtol=1e-10,
        )
    assert np.isnan(float(stats.truncnorm.logpdf(0.0, 1.0, 1.0)))
    assert (
        float(stats.truncnorm.cdf(5.0, -1.0, 1.0)) == 1.0
        and float(stats.truncnorm.cdf(-5.0, -1.0, 1.0)) == 0.0
    )
