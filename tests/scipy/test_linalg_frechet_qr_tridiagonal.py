"""`scipy.linalg.expm_frechet`, `qr_multiply` and `eigh_tridiagonal` against scipy.linalg (and
NumPy's eigh), in float32 and float64, real and complex, batched, under jit and vmap, with
gradients of expm_frechet and the error cases."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import morphax
import morphax.numpy as jnp
from morphax.scipy import linalg
from morphax.test_util import check_grads

rng = np.random.default_rng(0)


def _tri(d, e):
    return np.diag(d) + np.diag(e, 1) + np.diag(np.conj(e), -1)


# --------------------------------------------------------------------------------- expm_frechet


@pytest.mark.parametrize("scale", [0.003, 0.15, 0.7, 1.5, 4.0, 30.0])
def test_expm_frechet_matches_scipy(scale):
    # The scales reach every Padé degree (3, 5, 7, 9) and degree 13 with squarings.
    a, e = rng.normal(size=(4, 4)) * scale, rng.normal(size=(4, 4))
    want_expm, want = sl.expm_frechet(a, e)
    with morphax.enable_x64():
        got_expm, got = linalg.expm_frechet(jnp.asarray(a), jnp.asarray(e))
        np.testing.assert_allclose(
            np.asarray(got_expm), want_expm, rtol=1e-12, atol=1e-13 * np.abs(want_expm).max()
        )
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-11, atol=1e-12 * np.abs(want).max())
        # The Fréchet derivative is expm's JVP.
        _, jvp = morphax.jvp(linalg.expm, (jnp.asarray(a),), (jnp.asarray(e),))
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(jvp), rtol=1e-9, atol=1e-10 * np.abs(want).max()
        )
    got_expm, got = linalg.expm_frechet(jnp.asarray(a, jnp.float32), jnp.asarray(e, jnp.float32))
    assert got.dtype == np.float32 and got_expm.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-5 * np.abs(want).max())


def test_expm_frechet_complex_batched_and_options():
    a = rng.normal(size=(2, 3, 3)) + 1j * rng.normal(size=(2, 3, 3))
    e = rng.normal(size=(2, 3, 3)) + 1j * rng.normal(size=(2, 3, 3))
    with morphax.enable_x64():
        only = linalg.expm_frechet(jnp.asarray(a), jnp.asarray(e), compute_expm=False, method="SPS")
        assert only.shape == (2, 3, 3) and only.dtype == np.complex128
        for i in range(2):
            np.testing.assert_allclose(np.asarray(only[i]), sl.expm_frechet(a[i], e[i])[1], rtol=1e-11)
        bad = linalg.expm_frechet(jnp.full((2, 2), np.nan), jnp.ones((2, 2)))
        assert np.isnan(np.asarray(bad[0])).all() and np.isnan(np.asarray(bad[1])).all()


def test_expm_frechet_jit_vmap_and_gradients():
    a, e = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    with morphax.enable_x64():
        f = morphax.jit(lambda x, y: linalg.expm_frechet(x, y, compute_expm=False))
        np.testing.assert_allclose(
            np.asarray(f(jnp.asarray(a), jnp.asarray(e))), sl.expm_frechet(a, e)[1], rtol=1e-11
        )
        stack = np.stack([a, 0.01 * a, 10 * a])
        got = morphax.vmap(f, in_axes=(0, None))(jnp.asarray(stack), jnp.asarray(e))
        for i in range(3):
            np.testing.assert_allclose(np.asarray(got[i]), sl.expm_frechet(stack[i], e)[1], rtol=1e-10)
        # Small (degree 7) and large (degree 13 plus squarings) norms.
        for s in (0.3, 3.0):
            check_grads(f, (jnp.asarray(s * a), jnp.asarray(e)), order=1, modes=("fwd", "rev"))


def test_expm_frechet_errors():
    with pytest.raises(ValueError, match="square matrix"):
        linalg.expm_frechet(jnp.ones((2, 3)), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="same shape"):
        linalg.expm_frechet(jnp.ones((2, 2)), jnp.ones((3, 3)))


# ---------------------------------------------------------------------------------- qr_multiply


def _assert_qr_multiply(got, want, atol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
    np.testing.assert_allclose(np.asarray(got[0]), want[0], atol=atol)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], atol=atol)
    if len(want) == 3:
        np.testing.assert_array_equal(np.asarray(got[2]), want[2])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("pivoting", [False, True])
def test_qr_multiply_matches_scipy(shape, pivoting):
    m, n = shape
    k = min(m, n)
    a = rng.normal(size=shape)
    cases = [("right", rng.normal(size=(2, m))), ("left", rng.normal(size=(k, 2))),
             ("right", rng.normal(size=m)), ("left", rng.normal(size=k))]  # fmt: skip
    for mode, c in cases:
        want = sl.qr_multiply(a, c, mode=mode, pivoting=pivoting)
        with morphax.enable_x64():
            got = linalg.qr_multiply(jnp.asarray(a), jnp.asarray(c), mode=mode, pivoting=pivoting)
            _assert_qr_multiply(got, want, 1e-12)
            if pivoting:
                assert got[2].dtype == np.int32
        got = linalg.qr_multiply(
            jnp.asarray(a, jnp.float32), jnp.asarray(c, jnp.float32), mode=mode, pivoting=pivoting
        )
        assert got[0].dtype == np.float32
        _assert_qr_multiply(got, want, 1e-5)


@pytest.mark.parametrize("mode", ["left", "right"])
def test_qr_multiply_complex_conjugate(mode):
    a = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    c = rng.normal(size=(3, 2) if mode == "left" else (2, 4)) + 1j * rng.normal(
        size=(3, 2) if mode == "left" else (2, 4)
    )
    with morphax.enable_x64():
        for conjugate in (False, True):
            want = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
            got = linalg.qr_multiply(jnp.asarray(a), jnp.asarray(c), mode=mode, conjugate=conjugate)
            _assert_qr_multiply(got, want, 1e-12)


def test_qr_multiply_batched_jit_vmap():
    a = rng.normal(size=(3, 5, 4))
    c = rng.normal(size=(2, 5))
    with morphax.enable_x64():
        got = linalg.qr_multiply(jnp.asarray(a), jnp.asarray(c), pivoting=True)
        f = morphax.jit(lambda x, y: linalg.qr_multiply(x, y, pivoting=True))
        mapped = morphax.vmap(f, in_axes=(0, None))(jnp.asarray(a), jnp.asarray(c))
        for i in range(3):
            want = sl.qr_multiply(a[i], c, pivoting=True)
            _assert_qr_multiply([g[i] for g in got], want, 1e-12)
            _assert_qr_multiply([g[i] for g in mapped], want, 1e-12)
        # Pivoting with equal column norms picks the first (ties as LAPACK's idamax).
        ties = np.eye(3)
        np.testing.assert_array_equal(
            np.asarray(linalg.qr_multiply(jnp.asarray(ties), jnp.ones(3), pivoting=True)[2]), [0, 1, 2]
        )


def test_qr_multiply_gradients():
    # NB: JAX's qr_multiply (geqrf/ormqr) has no derivative; this one differentiates through qr.
    with morphax.enable_x64():
        a, c = jnp.asarray(rng.normal(size=(5, 3))), jnp.asarray(rng.normal(size=(2, 5)))
        check_grads(lambda x, y: linalg.qr_multiply(x, y)[0], (a, c), order=1, modes=("fwd", "rev"))
        check_grads(
            lambda x, y: linalg.qr_multiply(x, y, pivoting=True)[1], (a, c), order=1, modes=("fwd", "rev")
        )
        a, c = jnp.asarray(rng.normal(size=(3, 5))), jnp.asarray(rng.normal(size=(3, 2)))
        check_grads(
            lambda x, y: linalg.qr_multiply(x, y, mode="left")[0], (a, c), order=1, modes=("fwd", "rev")
        )


def test_qr_multiply_errors():
    with pytest.raises(ValueError, match="mode must be"):
        linalg.qr_multiply(jnp.ones((3, 2)), jnp.ones((2, 3)), mode="up")
    with pytest.raises(ValueError, match="Q has 2 columns"):
        linalg.qr_multiply(jnp.ones((3, 2)), jnp.ones((3, 1)), mode="left")
    with pytest.raises(ValueError, match="Q has 3 rows"):
        linalg.qr_multiply(jnp.ones((3, 2)), jnp.ones((1, 2)), mode="right")


# ----------------------------------------------------------------------------- eigh_tridiagonal


@pytest.mark.parametrize("x64", [False, True])
def test_eigh_tridiagonal_eigenvalues_match_scipy(x64):
    d, e = rng.normal(size=8), rng.normal(size=7)
    want = sl.eigh_tridiagonal(d, e, eigvals_only=True)
    with morphax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        got = linalg.eigh_tridiagonal(jnp.asarray(d, dtype), jnp.asarray(e, dtype), eigvals_only=True)
        assert got.dtype == dtype and got.shape == (8,)
        tol = 1e-13 if x64 else 2e-6
        np.testing.assert_allclose(np.asarray(got), want, atol=tol * np.abs(want).max())
        got = linalg.eigh_tridiagonal(
            jnp.asarray(d, dtype), jnp.asarray(e, dtype), eigvals_only=True, select="i", select_range=(2, 5)
        )
        np.testing.assert_allclose(np.asarray(got), want[2:6], atol=tol * np.abs(want).max())
        loose = linalg.eigh_tridiagonal(
            jnp.asarray(d, dtype), jnp.asarray(e, dtype), eigvals_only=True, tol=1e-2
        )
        np.testing.assert_allclose(np.asarray(loose), want, atol=1e-2)


@pytest.mark.parametrize("x64", [False, True])
def test_eigh_tridiagonal_eigenvectors(x64):
    d, e = rng.normal(size=7), rng.normal(size=6)
    t = _tri(d, e)
    with morphax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        w, v = linalg.eigh_tridiagonal(jnp.asarray(d, dtype), jnp.asarray(e, dtype))
        w, v = np.asarray(w, np.float64), np.asarray(v, np.float64)
        assert v.shape == (7, 7)
        want_w, want_v = sl.eigh_tridiagonal(d, e)
        tol = 1e-12 if x64 else 5e-5
        np.testing.assert_allclose(w, want_w, atol=tol * 10)
        np.testing.assert_allclose(t @ v, v * w, atol=tol * 10)
        np.testing.assert_allclose(v.T @ v, np.eye(7), atol=tol * 10)
        np.testing.assert_allclose(np.abs(v), np.abs(want_v), atol=tol * 100)  # equal up to sign


def test_eigh_tridiagonal_clusters_complex_and_small():
    with morphax.enable_x64():
        # Wilkinson's W21+: pairs of eigenvalues agreeing to many digits need orthogonalization.
        d, e = np.abs(np.arange(-10.0, 11.0)), np.ones(20)
        w, v = linalg.eigh_tridiagonal(jnp.asarray(d), jnp.asarray(e))
        w, v = np.asarray(w), np.asarray(v)
        np.testing.assert_allclose(w, sl.eigh_tridiagonal(d, e, eigvals_only=True), atol=1e-12)
        np.testing.assert_allclose(v.T @ v, np.eye(21), atol=1e-10)
        np.testing.assert_allclose(_tri(d, e) @ v, v * w, atol=1e-10)
        # A repeated eigenvalue (a decoupled matrix).
        d2, e2 = np.array([2.0, 2.0, 2.0, 1.0]), np.array([0.0, 0.0, 0.5])
        w, v = (np.asarray(x) for x in linalg.eigh_tridiagonal(jnp.asarray(d2), jnp.asarray(e2)))
        np.testing.assert_allclose(w, np.linalg.eigvalsh(_tri(d2, e2)), atol=1e-12)
        np.testing.assert_allclose(v.T @ v, np.eye(4), atol=1e-10)
        np.testing.assert_allclose(_tri(d2, e2) @ v, v * w, atol=1e-10)
        # Hermitian complex input: real eigenvalues, complex eigenvectors.
        dc = rng.normal(size=5) + 0j
        ec = rng.normal(size=4) + 1j * rng.normal(size=4)
        w, v = linalg.eigh_tridiagonal(jnp.asarray(dc), jnp.asarray(ec))
        assert w.dtype == np.float64 and v.dtype == np.complex128
        w, v = np.asarray(w), np.asarray(v)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(_tri(dc, ec)), atol=1e-12)
        np.testing.assert_allclose(_tri(dc, ec) @ v, v * w, atol=1e-10)
        np.testing.assert_allclose(v.conj().T @ v, np.eye(5), atol=1e-10)
        # The zero matrix and a multiple of the identity: any orthonormal basis will do.
        for d3 in (np.zeros(4), np.full(4, 2.5)):
            w, v = (np.asarray(x) for x in linalg.eigh_tridiagonal(jnp.asarray(d3), jnp.zeros(3)))
            np.testing.assert_allclose(w, d3, atol=1e-12)
            np.testing.assert_allclose(v.T @ v, np.eye(4), atol=1e-12)
        # One and zero rows.
        w, v = linalg.eigh_tridiagonal(jnp.asarray([3.0]), jnp.zeros(0))
        np.testing.assert_allclose(np.asarray(w), [3.0])
        np.testing.assert_allclose(np.asarray(v), [[1.0]])


def test_eigh_tridiagonal_jit_and_vmap():
    ds, e = rng.normal(size=(3, 6)), rng.normal(size=5)
    with morphax.enable_x64():
        f = morphax.jit(lambda d, e: linalg.eigh_tridiagonal(d, e, eigvals_only=True))
        got = morphax.vmap(f, in_axes=(0, None))(jnp.asarray(ds), jnp.asarray(e))
        for i in range(3):
            np.testing.assert_allclose(
                np.asarray(got[i]), sl.eigh_tridiagonal(ds[i], e, eigvals_only=True), atol=1e-12
            )
        w, v = morphax.jit(linalg.eigh_tridiagonal)(jnp.asarray(ds[0]), jnp.asarray(e))
        np.testing.assert_allclose(_tri(ds[0], e) @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-10)


def test_eigh_tridiagonal_errors():
    with pytest.raises(NotImplementedError, match="select='v'"):
        linalg.eigh_tridiagonal(
            jnp.ones(3), jnp.ones(2), eigvals_only=True, select="v", select_range=(0.0, 1.0)
        )
    with pytest.raises(ValueError, match="select_range must be specified"):
        linalg.eigh_tridiagonal(jnp.ones(3), jnp.ones(2), eigvals_only=True, select="i")
    with pytest.raises(ValueError, match="empty index range"):
        linalg.eigh_tridiagonal(jnp.ones(3), jnp.ones(2), eigvals_only=True, select="i", select_range=(2, 1))
    with pytest.raises(TypeError, match="same dtype"):
        linalg.eigh_tridiagonal(jnp.ones(3), jnp.ones(2, jnp.int32), eigvals_only=True)
    with pytest.raises(TypeError, match="only float32"):
        linalg.eigh_tridiagonal(jnp.ones(3, jnp.int32), jnp.ones(2, jnp.int32), eigvals_only=True)
    with pytest.raises(ValueError, match=r"shape \(N-1,\)"):
        linalg.eigh_tridiagonal(jnp.ones(3), jnp.ones(3), eigvals_only=True)
