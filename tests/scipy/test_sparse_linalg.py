"""`scipy.sparse.linalg` (cg, gmres in both solve methods, bicgstab) against numpy.linalg.solve
on SPD and general well-conditioned systems: matrices and functions as operators, pytree
operands, preconditioners, x0, jit, vmap, and gradients of the solution in b and the matrix."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.scipy.sparse.linalg import bicgstab, cg, gmres
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
N = 5
_R = rng.normal(size=(N, N))
SPD = _R @ _R.T + N * np.eye(N)
GEN = _R + 2 * N * np.eye(N) + np.triu(rng.normal(size=(N, N)), 1)  # nonsymmetric, well conditioned
B = rng.normal(size=N)

SOLVERS = {
    "cg": cg,
    "bicgstab": bicgstab,
    "gmres-batched": functools.partial(gmres, solve_method="batched"),
    "gmres-incremental": functools.partial(gmres, solve_method="incremental", restart=3),
}
GENERAL = ["bicgstab", "gmres-batched", "gmres-incremental"]


def _matrix_for(name):
    return SPD if name == "cg" else GEN


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("x64", [False, True])
def test_matches_numpy_solve(name, x64):
    a = _matrix_for(name)
    want = np.linalg.solve(a, B)
    with morphax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        x, info = SOLVERS[name](jnp.asarray(a, dtype), jnp.asarray(B, dtype), tol=1e-10 if x64 else 1e-6)
        assert x.dtype == dtype and x.shape == (N,)
        np.testing.assert_allclose(np.asarray(x), want, atol=1e-9 if x64 else 1e-5)
        if name.startswith("gmres"):
            assert int(info) == 0
        else:
            assert info is None
        # The operator as a function, and the initial guess.
        x, _ = SOLVERS[name](
            lambda v: jnp.asarray(a, dtype) @ v, jnp.asarray(B, dtype), x0=jnp.ones(N, dtype)
        )
        np.testing.assert_allclose(np.asarray(x), want, atol=1e-4)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_pytree_operands(name):
    # A block-diagonal operator on {"u": R^2, "w": R^(2x3)} (the second block acts on the
    # flattened matrix), written without ever forming the big matrix.
    a1 = _matrix_for(name)[:2, :2]
    a2 = np.kron(np.eye(2), _matrix_for(name)[2:, 2:])

    def op(t):
        return {"u": jnp.asarray(a1) @ t["u"], "w": (jnp.asarray(a2) @ t["w"].reshape(-1)).reshape(2, 3)}

    rhs = {"u": rng.normal(size=2), "w": rng.normal(size=(2, 3))}
    with morphax.enable_x64():
        x, _ = SOLVERS[name](op, {k: jnp.asarray(v) for k, v in rhs.items()}, tol=1e-12)
        assert set(x) == {"u", "w"} and x["w"].shape == (2, 3)
        np.testing.assert_allclose(np.asarray(x["u"]), np.linalg.solve(a1, rhs["u"]), atol=1e-10)
        np.testing.assert_allclose(
            np.asarray(x["w"]).reshape(-1), np.linalg.solve(a2, rhs["w"].reshape(-1)), atol=1e-10
        )


@pytest.mark.parametrize("name", list(SOLVERS))
def test_preconditioner(name):
    a = _matrix_for(name)
    want = np.linalg.solve(a, B)
    with morphax.enable_x64():
        # An exact preconditioner (A^-1, as a matrix and as a function) solves in one step.
        solve = SOLVERS[name]
        exact = jnp.asarray(np.linalg.inv(a))
        for m in (exact, lambda v: exact @ v):
            x, _ = solve(jnp.asarray(a), jnp.asarray(B), M=m, maxiter=1, tol=1e-12)
            np.testing.assert_allclose(np.asarray(x), want, atol=1e-10)
        # Jacobi still converges to the same solution.
        jacobi = jnp.asarray(np.diag(1 / np.diag(a)))
        x, _ = solve(jnp.asarray(a), jnp.asarray(B), M=jacobi, tol=1e-12)
        np.testing.assert_allclose(np.asarray(x), want, atol=1e-10)
    if name == "cg":
        with morphax.enable_x64():
            x, _ = cg(jnp.asarray(a), jnp.asarray(B), maxiter=1)
            assert np.abs(np.asarray(x) - want).max() > 1e-3  # one plain step is not enough


def test_complex_hermitian_cg_and_general_gmres():
    h = _R + 1j * rng.normal(size=(N, N))
    hpd = h @ h.conj().T + N * np.eye(N)
    bc = B + 1j * rng.normal(size=N)
    with morphax.enable_x64():
        x, _ = cg(jnp.asarray(hpd), jnp.asarray(bc), tol=1e-12)
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(hpd, bc), atol=1e-10)
        g = GEN + 1j * np.triu(rng.normal(size=(N, N)))
        for name in GENERAL:
            x, _ = SOLVERS[name](jnp.asarray(g), jnp.asarray(bc), tol=1e-12)
            np.testing.assert_allclose(np.asarray(x), np.linalg.solve(g, bc), atol=1e-10)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_jit_and_vmap(name):
    a = _matrix_for(name)
    bs = rng.normal(size=(3, N))
    with morphax.enable_x64():
        solve = morphax.jit(lambda m, v: SOLVERS[name](m, v, tol=1e-12)[0])
        np.testing.assert_allclose(
            np.asarray(solve(jnp.asarray(a), jnp.asarray(B))), np.linalg.solve(a, B), atol=1e-10
        )
        got = morphax.vmap(solve, in_axes=(None, 0))(jnp.asarray(a), jnp.asarray(bs))
        np.testing.assert_allclose(np.asarray(got), np.linalg.solve(a, bs.T).T, atol=1e-10)
        mats = np.stack([a, a + np.eye(N), 2 * a])
        got = morphax.vmap(solve)(jnp.asarray(mats), jnp.asarray(bs))
        np.testing.assert_allclose(np.asarray(got), np.linalg.solve(mats, bs[..., None])[..., 0], atol=1e-10)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_gradients_in_b_and_matrix(name):
    a = _matrix_for(name)
    solve = SOLVERS[name]
    with morphax.enable_x64():

        def in_b(v):
            return solve(jnp.asarray(a), v, tol=1e-13)[0]

        def in_matrix(m, v):
            # cg needs an SPD operator along every direction of the check: symmetrize.
            m = (m + m.T) / 2 if name == "cg" else m
            return solve(lambda t: m @ t, v, tol=1e-13)[0]

        check_grads(in_b, (jnp.asarray(B),), order=1, modes=("fwd", "rev"))
        check_grads(in_matrix, (jnp.asarray(a), jnp.asarray(B)), order=1, modes=("fwd", "rev"))
        # The gradient of a scalar loss agrees with the closed form -A^-T g x^T.
        x = np.linalg.solve(a, B)
        ga = morphax.grad(lambda m: jnp.sum(in_matrix(m, jnp.asarray(B))))(jnp.asarray(a))
        want = -np.outer(np.linalg.solve(a.T, np.ones(N)), x)
        if name == "cg":
            want = (want + want.T) / 2
        np.testing.assert_allclose(np.asarray(ga), want, atol=1e-8)


def test_public_module_path():
    assert morphax.scipy.sparse.linalg.cg is cg


def test_errors():
    with pytest.raises(ValueError, match="square matrix"):
        cg(jnp.ones((3, 4)), jnp.ones(3))
    with pytest.raises(TypeError, match="linear operator A must be"):
        bicgstab([[1.0, 0.0], [0.0, 1.0]], jnp.ones(2))
    with pytest.raises(ValueError, match="tree structure"):
        cg(lambda t: t, {"a": jnp.ones(2)}, x0=[jnp.ones(2)])
    with pytest.raises(ValueError, match="matching shapes"):
        bicgstab(jnp.eye(2), jnp.ones(2), x0=jnp.ones(3))
    with pytest.raises(ValueError, match="solve_method"):
        gmres(jnp.eye(2), jnp.ones(2), solve_method="direct")
