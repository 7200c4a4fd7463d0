"""`scipy.optimize.minimize` (BFGS and the experimental L-BFGS) against SciPy's minimize on
Rosenbrock's function and quadratics, in float32 and float64, under jit and vmap; the result
fields, options and errors as JAX has them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

import morphax
import morphax.numpy as jnp
from morphax.scipy.optimize import OptimizeResults, minimize

LBFGS = "l-bfgs-experimental-do-not-rely-on-this"
rng = np.random.default_rng(0)
M = rng.normal(size=(4, 4))
A = M @ M.T + 4 * np.eye(4)  # SPD, well conditioned
B = rng.normal(size=4)


def rosen(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quadratic(x, a, b):
    return 0.5 * x @ a @ x - b @ x + 3.0


@pytest.mark.parametrize("method", ["BFGS", LBFGS])
@pytest.mark.parametrize("x64", [False, True])
def test_rosenbrock_matches_scipy(method, x64):
    # From SciPy's classic start: JAX's own line search fails here (jax-ml/jax#40228).
    x0 = np.array([-1.2, 1.0])
    want = so.minimize(rosen_np, x0, method="BFGS")
    with morphax.enable_x64(x64):
        r = minimize(rosen, jnp.asarray(x0), method=method)
        dtype = np.float64 if x64 else np.float32
        assert isinstance(r, OptimizeResults)
        assert r.x.dtype == dtype and r.fun.dtype == dtype and r.jac.dtype == dtype
        np.testing.assert_allclose(np.asarray(r.x), want.x, atol=1e-4 if x64 else 2e-3)
        np.testing.assert_allclose(np.asarray(r.x), [1.0, 1.0], atol=2e-6 if x64 else 1e-3)
        assert float(r.fun) < (1e-10 if x64 else 1e-6)
        assert int(r.nit) > 10 and int(r.nfev) >= int(r.nit) and int(r.njev) == int(r.nfev)
        if method == "BFGS":
            assert bool(r.success) and int(r.status) == 0
            assert r.hess_inv.shape == (2, 2) and r.hess_inv.dtype == dtype
            assert float(jnp.max(jnp.abs(r.jac))) < 1e-5
        else:
            assert r.hess_inv is None


@pytest.mark.parametrize("method", ["BFGS", LBFGS])
def test_quadratic_with_args(method):
    x0 = np.zeros(4)
    want = so.minimize(quadratic, x0, args=(A, B), method="BFGS", tol=1e-10)
    with morphax.enable_x64():
        r = minimize(quadratic, jnp.asarray(x0), args=(jnp.asarray(A), jnp.asarray(B)), method=method)
        # L-BFGS may stop at the minimum on "no progress" (status 4) before the gradient test.
        assert int(r.status) in ((0,) if method == "BFGS" else (0, 4))
        # The default gtol (1e-5) and A's eigenvalues (>= 4) bound the error in x.
        np.testing.assert_allclose(np.asarray(r.x), want.x, atol=1e-5)
        np.testing.assert_allclose(np.asarray(r.x), np.linalg.solve(A, B), atol=1e-5)
        np.testing.assert_allclose(float(r.fun), want.fun, rtol=1e-10)
        if method == "BFGS":
            # On a quadratic the BFGS estimate approaches the true inverse Hessian.
            np.testing.assert_allclose(np.asarray(r.hess_inv), np.linalg.inv(A), atol=0.05)
    # float32: same minimum to single precision.
    r = minimize(
        quadratic,
        jnp.zeros(4),
        args=(jnp.asarray(A, jnp.float32), jnp.asarray(B, jnp.float32)),
        method=method,
    )
    assert r.x.dtype == np.float32
    np.testing.assert_allclose(np.asarray(r.x), np.linalg.solve(A, B), atol=1e-4)


def test_jit_and_vmap_over_x0():
    starts = np.array([[-1.2, 1.0], [0.5, 1.5], [2.0, 2.0]])
    solve = morphax.jit(lambda x0: minimize(rosen, x0, method="BFGS").x)
    with morphax.enable_x64():
        for x0 in starts[:2]:
            np.testing.assert_allclose(np.asarray(solve(jnp.asarray(x0))), [1.0, 1.0], atol=1e-5)
        batched = morphax.vmap(
            lambda x0: minimize(quadratic, x0, args=(jnp.asarray(A), jnp.asarray(B)), method=LBFGS)
        )
        r = batched(jnp.asarray(rng.normal(size=(3, 4))))
        assert r.x.shape == (3, 4) and r.nit.shape == (3,) and r.hess_inv is None
        np.testing.assert_allclose(np.asarray(r.x), np.tile(np.linalg.solve(A, B), (3, 1)), atol=1e-6)
        r = morphax.vmap(lambda x0: minimize(rosen, x0, method="BFGS"))(jnp.asarray(starts))
        np.testing.assert_allclose(np.asarray(r.x), np.ones((3, 2)), atol=1e-5)
        assert r.hess_inv.shape == (3, 2, 2) and np.asarray(r.success).all()


def test_options_and_tol():
    with morphax.enable_x64():
        x0 = jnp.asarray([-1.2, 1.0])
        r = minimize(rosen, x0, method="BFGS", options=dict(maxiter=3))
        assert int(r.nit) == 3 and int(r.status) == 1 and not bool(r.success)
        r = minimize(rosen, x0, method=LBFGS, options=dict(maxiter=3))
        assert int(r.nit) == 4 and int(r.status) == 1 and not bool(r.success)
        loose = minimize(
            quadratic, jnp.zeros(4), args=(jnp.asarray(A), jnp.asarray(B)), method="BFGS", tol=1e-1
        )
        tight = minimize(
            quadratic, jnp.zeros(4), args=(jnp.asarray(A), jnp.asarray(B)), method="bfgs", tol=1e-9
        )
        assert float(jnp.max(jnp.abs(tight.jac))) < 1e-9 <= float(jnp.max(jnp.abs(loose.jac)))
        assert int(loose.nit) < int(tight.nit)


def test_errors():
    with pytest.raises(TypeError, match="args must be a tuple"):
        minimize(rosen, jnp.zeros(2), args=1.0, method="BFGS")
    with pytest.raises(ValueError, match="not recognized"):
        minimize(rosen, jnp.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match="1-D"):
        minimize(rosen, jnp.zeros((2, 2)), method="BFGS")


def test_lbfgs_complex_variables():
    # A real objective of complex z: the minimizer solves (z - c) + 0.2 |z|^2 z = 0 per entry.
    c = np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j])
    with morphax.enable_x64():
        r = minimize(
            lambda z: jnp.sum(jnp.abs(z - c) ** 2) + 0.1 * jnp.sum(jnp.abs(z) ** 4),
            jnp.zeros(3, jnp.complex128),
            method=LBFGS,
        )
        assert r.x.dtype == np.complex128 and r.fun.dtype == np.float64 and int(r.status) == 0
        z = np.asarray(r.x)
        np.testing.assert_allclose(z - c + 0.2 * np.abs(z) ** 2 * z, 0, atol=1e-5)
