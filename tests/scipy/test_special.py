"""`morphax.scipy.special` against SciPy: values on random inputs over each function's domain
plus edge points, in float32 and float64; float64 finite differences (check_grads) where JAX
differentiates; one jit and one vmap case per function; JAX's conventions where it departs from
SciPy (documented per case)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import morphax
import morphax.numpy as jnp
from morphax.scipy import special as ms
from morphax.test_util import check_grads

# name -> (SciPy reference, argument domains, check_grads order (0: none), float32 rtol); the
# float64 tolerance is 1e-10 unless _LOOSER says otherwise (JAX's algorithms, same accuracy).
CASES = {
    "gammaln": (ss.gammaln, [(0.1, 20)], 2, 2e-6),
    "gamma": (ss.gamma, [(0.2, 8)], 2, 5e-6),
    "loggamma": (ss.loggamma, [(0.1, 20)], 2, 2e-6),
    "gammasgn": (ss.gammasgn, [(-4.5, 4.5)], 0, 0),
    "digamma": (ss.digamma, [(0.2, 20)], 1, 1e-5),
    "gammainc": (ss.gammainc, [(0.5, 6), (0.1, 8)], 1, 2e-5),
    "gammaincc": (ss.gammaincc, [(0.5, 6), (0.1, 8)], 1, 2e-5),
    "beta": (ss.beta, [(0.3, 5), (0.3, 5)], 1, 2e-5),
    "betaln": (ss.betaln, [(0.3, 50), (0.3, 5)], 1, 2e-5),
    "betainc": (ss.betainc, [(0.5, 5), (0.5, 5), (0.05, 0.95)], 0, 5e-5),
    "erf": (ss.erf, [(-3, 3)], 2, 2e-6),
    "erfc": (ss.erfc, [(-3, 5)], 2, 2e-5),
    "erfinv": (ss.erfinv, [(-0.99, 0.99)], 2, 2e-5),
    "ndtr": (ss.ndtr, [(-6, 6)], 2, 2e-5),
    "ndtri": (ss.ndtri, [(0.01, 0.99)], 1, 2e-5),
    "log_ndtr": (ss.log_ndtr, [(-8, 8)], 2, 2e-5),
    "logit": (ss.logit, [(0.05, 0.95)], 2, 2e-6),
    "expit": (ss.expit, [(-8, 8)], 2, 2e-6),
    "xlogy": (ss.xlogy, [(0.1, 3), (0.1, 3)], 2, 2e-6),
    "xlog1py": (ss.xlog1py, [(0.1, 3), (0.1, 3)], 2, 2e-6),
    "entr": (ss.entr, [(0.05, 3)], 2, 2e-6),
    "rel_entr": (ss.rel_entr, [(0.05, 3), (0.05, 3)], 2, 2e-6),
    "kl_div": (ss.kl_div, [(0.05, 3), (0.05, 3)], 2, 2e-6),
    "i0": (ss.i0, [(-5, 5)], 1, 2e-6),
    "i0e": (ss.i0e, [(-5, 5)], 1, 2e-6),
    "i1": (ss.i1, [(-5, 5)], 1, 2e-6),
    "i1e": (ss.i1e, [(-5, 5)], 1, 2e-6),
    "factorial": (ss.factorial, [(0, 10)], 1, 5e-6),
    "poch": (ss.poch, [(0.5, 4), (0.2, 3)], 1, 2e-5),
    "zeta": (ss.zeta, [(1.5, 6), (0.5, 4)], 1, 2e-5),
    "boxcox": (ss.boxcox, [(0.1, 4), (-2, 2)], 2, 2e-5),
    "boxcox1p": (ss.boxcox1p, [(-0.5, 3), (-2, 2)], 2, 2e-5),
}


# (rtol, atol) where an algorithm shared with JAX is less accurate than SciPy's: betaln through
# lgamma differences; rel_entr / kl_div cancel where p is near q; log_ndtr's -ndtr(-x) above 8.
_LOOSER = {
    ("betaln", np.float64): (3e-7, 0),
    ("rel_entr", np.float32): (1e-4, 2e-6),
    ("kl_div", np.float32): (1e-4, 2e-6),
    ("log_ndtr", np.float32): (5e-4, 1e-8),
    ("log_ndtr", np.float64): (1e-10, 1e-15),
}


def _args(domains, dtype, n=40, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, size=n).astype(dtype) for lo, hi in domains]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_against_scipy(name, dtype):
    ref, domains, _, rtol32 = CASES[name]
    args = _args(domains, dtype)
    want = ref(*[a.astype(np.float64) for a in args])
    with morphax.enable_x64(dtype == np.float64):
        got = getattr(ms, name)(*args)
    assert got.dtype == dtype
    rtol, atol = _LOOSER.get((name, dtype), (rtol32 if dtype == np.float32 else 1e-10, 1e-30))
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[2]))
def test_derivatives(name):
    _, domains, order, _ = CASES[name]
    args = [a[:4] for a in _args(domains, np.float64, seed=1)]
    with morphax.enable_x64():
        check_grads(getattr(ms, name), args, order=order, modes=("fwd", "rev"), rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_and_vmap(name):
    ref, domains, _, rtol32 = CASES[name]
    args = _args(domains, np.float32, n=6, seed=2)
    fn = getattr(ms, name)
    eager = np.asarray(fn(*args))
    np.testing.assert_allclose(np.asarray(morphax.jit(fn)(*args)), eager, rtol=2e-6, atol=1e-30)
    mapped = morphax.vmap(fn)(*[a.reshape(3, 2) for a in args])
    np.testing.assert_allclose(np.asarray(mapped).ravel(), eager, rtol=2e-6, atol=1e-30)


def test_edges_and_conventions():
    nan, inf = np.nan, np.inf
    np.testing.assert_array_equal(
        ms.gammasgn(np.array([-2.0, -1.5, -0.0, 0.0, nan])), [nan, 1.0, -1.0, 1.0, nan]
    )
    # JAX's conventions: digamma and loggamma are nan at 0 (SciPy: -inf / inf)
    assert np.isnan(float(ms.digamma(0.0))) and np.isnan(float(ms.loggamma(0.0)))
    np.testing.assert_array_equal(ms.ndtri(np.array([0.0, 1.0, 1.5])), [-inf, inf, nan])
    assert float(ms.xlogy(0.0, 0.0)) == 0.0 and np.isnan(float(ms.xlogy(0.0, nan)))
    assert float(ms.entr(-1.0)) == -inf and float(ms.entr(0.0)) == 0.0
    np.testing.assert_array_equal(
        ms.rel_entr(np.array([0.0, 1.0, 1.0]), np.array([1.0, 0.0, -1.0])), [0.0, inf, inf]
    )
    assert float(ms.factorial(-1.0)) == 0.0 and float(ms.comb(3.0, 5.0)) == 0.0
    np.testing.assert_allclose(
        float(ms.comb(5.0, 2.0, repetition=True)), ss.comb(5, 2, repetition=True), rtol=1e-6
    )
    # log_ndtr in the far tails: the asymptotic series below -10, -ndtr(-x) above 5
    with morphax.enable_x64():
        x = np.array([-40.0, -25.0, 9.0, 30.0])
        np.testing.assert_allclose(np.asarray(ms.log_ndtr(x)), ss.log_ndtr(x), rtol=1e-9)
    np.testing.assert_allclose(float(morphax.grad(ms.log_ndtr)(-20.0)), 20.0497, rtol=1e-4)
    # betaln keeps its accuracy for a huge argument (lgamma differences would lose it)
    np.testing.assert_allclose(
        float(ms.betaln(np.float32(1e7), np.float32(2.5))), ss.betaln(1e7, 2.5), rtol=1e-6
    )
    np.testing.assert_allclose(float(ms.multigammaln(np.float32(3.3), 3)), ss.multigammaln(3.3, 3), rtol=1e-6)
    np.testing.assert_allclose(float(ms.polygamma(2, np.float32(1.5))), ss.polygamma(2, 1.5), rtol=1e-5)
    grads = morphax.grad(ms.zeta, argnums=(0, 1))(3.0, 2.5)
    h = 1e-4
    np.testing.assert_allclose(
        float(grads[0]), (ss.zeta(3 + h, 2.5) - ss.zeta(3 - h, 2.5)) / (2 * h), rtol=1e-3
    )
    np.testing.assert_allclose(
        float(grads[1]), (ss.zeta(3, 2.5 + h) - ss.zeta(3, 2.5 - h)) / (2 * h), rtol=1e-3
    )


def test_errors_like_jax():
    with pytest.raises(ValueError, match="integer type"):
        ms.polygamma(1.0, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann zeta"):
        ms.zeta(2.0)
    with pytest.raises(TypeError, match="series_order"):
        ms.log_ndtr(1.0, series_order=2.5)
    with pytest.raises(TypeError, match="not supported"):
        ms.ndtr(jnp.ones(2, jnp.bfloat16))
    with pytest.raises(ValueError, match="complex"):
        ms.gamma(1j)
    with pytest.raises(NotImplementedError):
        ms.factorial(3, exact=True)
