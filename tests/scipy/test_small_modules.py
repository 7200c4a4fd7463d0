"""`scipy.fft` (DCT type 2 and inverse), `scipy.ndimage.map_coordinates`, `scipy.cluster.vq.vq`
and `scipy.integrate.trapezoid` against SciPy, in float64, with gradients, jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.cluster.vq as svq
import scipy.fft as sf
import scipy.ndimage as snd

import morphax
from morphax.scipy import cluster, fft, integrate, ndimage
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
X = rng.normal(size=(5, 6))


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


@pytest.mark.parametrize("norm", [None, "backward", "ortho"])
def test_dct_family(norm):
    for axis, n in ((-1, None), (0, None), (0, 7), (1, 4)):
        np.testing.assert_allclose(
            np.asarray(fft.dct(X, n=n, axis=axis, norm=norm)),
            sf.dct(X, n=n, axis=axis, norm=norm),
            atol=1e-12,
        )
        np.testing.assert_allclose(
            np.asarray(fft.idct(X, n=n, axis=axis, norm=norm)),
            sf.idct(X, n=n, axis=axis, norm=norm),
            atol=1e-12,
        )
    np.testing.assert_allclose(np.asarray(fft.dctn(X, norm=norm)), sf.dctn(X, norm=norm), atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(fft.idctn(X, s=(6, 4), norm=norm)), sf.idctn(X, s=(6, 4), norm=norm), atol=1e-12
    )
    np.testing.assert_allclose(np.asarray(fft.idct(fft.dct(X, norm=norm), norm=norm)), X, atol=1e-12)
    z = X + 1j * X[::-1]
    np.testing.assert_allclose(np.asarray(fft.dct(z, norm=norm)), sf.dct(z, norm=norm), atol=1e-12)


def test_dct_derivatives_and_errors():
    check_grads(lambda v: fft.dct(v, norm="ortho"), (X,), order=1)
    with pytest.raises(NotImplementedError, match="type 2"):
        fft.dct(X, type=3)
    with pytest.raises(ValueError, match="not implemented"):
        fft.dct(X, norm="forward")


@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates(mode, order):
    img = rng.normal(size=(6, 7))
    coords = [rng.uniform(-2, 8, 12), rng.uniform(-2, 9, 12)]
    # JAX's "constant" is SciPy's "grid-constant"; its "wrap" is SciPy's "grid-wrap"
    scipy_mode = {"constant": "grid-constant", "wrap": "grid-wrap"}.get(mode, mode)
    want = snd.map_coordinates(img, coords, order=order, mode=scipy_mode, cval=0.5)
    np.testing.assert_allclose(
        np.asarray(ndimage.map_coordinates(img, coords, order, mode=mode, cval=0.5)), want, atol=1e-12
    )
    jitted = morphax.jit(lambda i, c0, c1: ndimage.map_coordinates(i, [c0, c1], order, mode=mode, cval=0.5))
    np.testing.assert_allclose(np.asarray(jitted(img, *coords)), want, atol=1e-12)


def test_map_coordinates_integers_gradients_and_errors():
    ints = np.arange(12).reshape(3, 4)
    got = ndimage.map_coordinates(ints, [np.array([0.5, 1.2]), np.array([1.5, 2.6])], 1)
    assert got.dtype == ints.dtype
    img = rng.normal(size=(4, 5))
    check_grads(
        lambda c: ndimage.map_coordinates(img, [c, c + 0.25], 1, mode="nearest"),
        (np.array([0.7, 1.4, 2.2]),),
        order=1,
    )
    with pytest.raises(NotImplementedError, match="order<=1"):
        ndimage.map_coordinates(img, [np.zeros(1), np.zeros(1)], 3)
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(img, [np.zeros(1)], 1)


def test_vq_and_trapezoid():
    obs, book = rng.normal(size=(10, 3)), rng.normal(size=(4, 3))
    code, dist = cluster.vq.vq(obs, book)
    want_code, want_dist = svq.vq(obs, book)
    np.testing.assert_array_equal(np.asarray(code), want_code)
    np.testing.assert_allclose(np.asarray(dist), want_dist, rtol=1e-12)
    code1, _ = cluster.vq.vq(obs[:, 0], book[:, 0])
    np.testing.assert_array_equal(np.asarray(code1), svq.vq(obs[:, :1], book[:, :1])[0])
    per_batch = morphax.vmap(lambda o: cluster.vq.vq(o, book)[0])(obs.reshape(2, 5, 3))
    np.testing.assert_array_equal(np.asarray(per_batch).ravel(), want_code)
    y = np.sin(np.linspace(0, 3, 11))
    np.testing.assert_allclose(float(integrate.trapezoid(y, dx=0.3)), np.trapezoid(y, dx=0.3), rtol=1e-12)
