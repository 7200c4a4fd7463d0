"""scipy.stats.gaussian_kde against SciPy's: densities, log densities, integrals and bandwidth
rules, under jit, vmap and grad; resample against JAX 0.10.2's draws (recorded values)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sst

import morphax
import morphax.numpy as jnp
from morphax.scipy.stats import gaussian_kde
from morphax.test_util import check_grads

RNG = np.random.default_rng(3)
DATA_2D = RNG.normal(size=(2, 40))
WEIGHTS = RNG.uniform(0.2, 1.0, size=40)
POINTS_2D = RNG.normal(size=(2, 9))
DATA_1D = RNG.standard_t(4, size=60)


@pytest.mark.parametrize("bw_method", [None, "scott", "silverman", 0.4, "callable"])
@pytest.mark.parametrize("weighted", [False, True])
def test_density_matches_scipy(bw_method, weighted):
    bw = (lambda kde: 0.6) if bw_method == "callable" else bw_method
    weights = WEIGHTS if weighted else None
    ours = gaussian_kde(DATA_2D, bw, weights)
    ref = sst.gaussian_kde(DATA_2D, bw, weights)
    np.testing.assert_allclose(ours.covariance, ref.covariance, rtol=1e-5)
    np.testing.assert_allclose(ours.neff, ref.neff, rtol=1e-5)
    np.testing.assert_allclose(ours(POINTS_2D), ref(POINTS_2D), rtol=2e-5)
    np.testing.assert_allclose(ours.pdf(POINTS_2D), ref.pdf(POINTS_2D), rtol=2e-5)
    np.testing.assert_allclose(ours.logpdf(POINTS_2D), ref.logpdf(POINTS_2D), rtol=2e-5, atol=2e-5)
    assert ours.d == 2 and ours.n == 40


def test_one_dimensional_and_integrals():
    ours, ref = gaussian_kde(DATA_1D), sst.gaussian_kde(DATA_1D)
    pts = np.linspace(-6, 6, 13)
    np.testing.assert_allclose(ours(pts), ref(pts), rtol=2e-5)
    # Far from the data the density underflows; its log does not.
    np.testing.assert_allclose(ours.logpdf(np.array([60.0])), ref.logpdf([60.0]), rtol=1e-4)
    np.testing.assert_allclose(ours.integrate_box_1d(-1.0, 2.5), ref.integrate_box_1d(-1.0, 2.5), rtol=1e-5)
    two, two_ref = gaussian_kde(DATA_2D, weights=WEIGHTS), sst.gaussian_kde(DATA_2D, weights=WEIGHTS)
    mean, cov = np.array([0.3, -0.2]), np.array([[1.0, 0.2], [0.2, 0.5]])
    np.testing.assert_allclose(
        two.integrate_gaussian(mean, cov), two_ref.integrate_gaussian(mean, cov), rtol=1e-5
    )
    other = RNG.normal(size=(2, 25)) + 0.5
    np.testing.assert_allclose(
        two.integrate_kde(gaussian_kde(other)), two_ref.integrate_kde(sst.gaussian_kde(other)), rtol=1e-5
    )
    # A single point given flat is read as one d-dimensional point.
    np.testing.assert_allclose(two(np.array([0.1, 0.2])), two_ref([0.1, 0.2]), rtol=2e-5)


def test_pytree_jit_vmap_grad():
    kde = gaussian_kde(DATA_2D, weights=WEIGHTS)
    leaves = morphax.tree.leaves(kde)
    assert len(leaves) == 5
    np.testing.assert_allclose(
        morphax.jit(lambda k, p: k.logpdf(p))(kde, POINTS_2D), kde.logpdf(POINTS_2D), rtol=1e-6
    )
    # vmap over points, one at a time, equals the batch.
    one_at_a_time = morphax.vmap(lambda p: kde(p[:, None])[0], in_axes=1)(jnp.asarray(POINTS_2D))
    np.testing.assert_allclose(one_at_a_time, kde(POINTS_2D), rtol=1e-6)
    with morphax.enable_x64():
        data = jnp.asarray(DATA_2D[:, :12])
        pts = jnp.asarray(POINTS_2D[:, :3])
        check_grads(lambda d: gaussian_kde(d).logpdf(pts), (data,), order=1, modes=["rev"])
        check_grads(lambda p: gaussian_kde(data, bw_method=0.7)(p), (pts,), order=2)


def test_resample_matches_jax_draws():
    # JAX 0.10.2: jax.scipy.stats.gaussian_kde(x, weights=w).resample(key, shape).
    x = np.array([[0.1, -0.4, 1.3, 0.7, -1.1, 0.25], [1.0, 0.5, -0.3, 0.2, 0.9, -0.6]], np.float32)
    kde = gaussian_kde(x, weights=np.array([1, 2, 1, 3, 1, 2], np.float32))
    got = kde.resample(morphax.random.key(7), (3,))
    want = [[-0.142913818359375, 0.5477505922317505, 0.24262064695358276],
            [0.7380853891372681, 0.196783646941185, 0.4285527169704437]]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    got = kde.resample(morphax.random.PRNGKey(1))
    np.testing.assert_allclose(got, [-0.5380837917327881, 0.6087037920951843], rtol=1e-5)


def test_bad_input():
    with pytest.raises(ValueError, match="more than one element"):
        gaussian_kde(np.array([1.0]))
    with pytest.raises(ValueError, match="bw_method"):
        gaussian_kde(DATA_1D, bw_method="wide")
    with pytest.raises(ValueError, match="one entry per data point"):
        gaussian_kde(DATA_1D, weights=np.ones(3))
    with pytest.raises(NotImplementedError, match="complex"):
        gaussian_kde(DATA_1D + 1j)
    kde = gaussian_kde(DATA_2D)
    with pytest.raises(ValueError, match="points have dimension 3, dataset has dimension 2"):
        kde(np.ones((3, 4)))
    with pytest.raises(ValueError, match="one-dimensional"):
        kde.integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        kde.integrate_box([0, 0], [1, 1])
    with pytest.raises(NotImplementedError):
        kde.set_bandwidth("silverman")
