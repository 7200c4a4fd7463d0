"""The rest of `lax.linalg` against NumPy/SciPy-LAPACK in float32 and float64: hessenberg and
tridiagonal (packed layouts, Q H Q^H = A through householder_product), householder_product and
ormqr against the Q of a QR, schur (Q T Q^H = A, sorting), cholesky_update, symmetric_product,
tridiagonal_solve (with its gradients and the perturbed solver) and qdwh; batching against a Python
loop, jit, and the derivative errors JAX raises too."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.linalg.lapack as lapack

import morphax
import morphax.numpy as jnp
from morphax.lax import linalg as L
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
DTYPES = ("float32", "float64")
TOL = {"float32": 2e-5, "float64": 1e-12, "complex64": 2e-5, "complex128": 1e-12}


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


def _close(got, want, dt, scale=1.0):
    np.testing.assert_allclose(np.asarray(got), want, rtol=TOL[dt] * scale, atol=TOL[dt] * scale)


def _randn(shape, dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dt)
    return rng.normal(size=shape).astype(dt)


def _q_of_hessenberg(packed, taus):
    """Q = 1 (+) householder_product(packed[1:, :-1], taus), built with numpy around the primitive."""
    n = packed.shape[-1]
    q = np.eye(n, dtype=packed.dtype)
    if n > 1:
        q[1:, 1:] = np.asarray(L.householder_product(packed[1:, :-1], taus))
    return q


@pytest.mark.parametrize("dt", DTYPES + ("complex64",))
def test_hessenberg_matches_lapack_and_reconstructs(dt):
    a = _randn((5, 5), dt)
    packed, taus = L.hessenberg(a)
    assert packed.dtype == a.dtype and taus.shape == (4,)
    want_h, want_tau, _ = lapack.get_lapack_funcs("gehrd", (a,))(a)
    _close(packed, want_h, dt, 10)
    _close(taus, want_tau[:4], dt, 10)
    packed, taus = np.asarray(packed), np.asarray(taus)
    h = np.triu(packed, -1)
    q = _q_of_hessenberg(packed, taus)
    _close(q @ h @ q.conj().T, a, dt, 20)
    _close(q.conj().T @ q, np.eye(5), dt, 10)
    h1, t1 = L.hessenberg(a[:1, :1])
    assert t1.shape == (0,) and np.asarray(h1)[0, 0] == a[0, 0]


@pytest.mark.parametrize("dt", DTYPES + ("complex128",))
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_lapack_and_reconstructs(dt, lower):
    a = _randn((5, 5), dt)
    herm = a + a.conj().T
    packed, d, e, taus = L.tridiagonal(herm, lower=lower)
    real = np.finfo(dt).dtype
    assert d.dtype == real and e.dtype == real and taus.dtype == herm.dtype
    name = "hetrd" if np.dtype(dt).kind == "c" else "sytrd"
    want = lapack.get_lapack_funcs(name, (herm,))(herm, lower=int(lower))
    for got, w in zip((packed, d, e, taus), want[:4]):
        _close(got, w, dt, 10)
    # Same tridiagonal matrix as T = Q^H A Q: equal spectra.
    t = np.diag(np.asarray(d)) + np.diag(np.asarray(e), -1) + np.diag(np.asarray(e), 1)
    _close(np.linalg.eigvalsh(t), np.linalg.eigvalsh(herm), dt, 50)
    if lower:
        # The reflectors sit below the subdiagonal: Q = 1 (+) householder_product(a[1:, :-1], taus).
        q = _q_of_hessenberg(np.asarray(packed), np.asarray(taus))
        _close(q @ t @ q.conj().T, herm, dt, 50)
    # Only the chosen triangle is read.
    garbage = np.triu(_randn((5, 5), dt), 1) if lower else np.tril(_randn((5, 5), dt), -1)
    _close(L.tridiagonal(herm + garbage, lower=lower)[1], np.asarray(d), dt)


@pytest.mark.parametrize("dt", DTYPES + ("complex64",))
def test_householder_product_and_ormqr_match_qr(dt):
    a = _randn((5, 3), dt)
    (raw, taus), _ = sl.qr(a, mode="raw")
    q_full = sl.qr(a)[0]
    _close(L.householder_product(raw, taus), sl.qr(a, mode="economic")[0], dt, 10)
    # Fewer reflectors than columns: the product of the first k only.
    h0 = np.eye(5, dtype=dt) - taus[0] * np.outer(np.r_[1, raw[1:, 0]], np.r_[1, raw[1:, 0]].conj())
    _close(L.householder_product(raw, taus[:1]), h0[:, :3], dt, 10)
    c = _randn((5, 2), dt)
    qh = q_full.conj().T
    cases = [(True, False, c, q_full @ c), (True, True, c, qh @ c)]
    cases += [(False, False, c.T, c.T @ q_full), (False, True, c.T, c.T @ qh)]
    for left, transpose, cc, want in cases:
        _close(L.ormqr(raw, taus, cc, left=left, transpose=transpose), want, dt, 10)
    with pytest.raises(ValueError, match="same number of rows"):
        L.ormqr(raw, taus, c[:3])
    with pytest.raises(ValueError, match="at least as many rows"):
        L.householder_product(raw.T, taus)
    with pytest.raises(ValueError, match="must not have more rows"):
        L.householder_product(raw, np.ones(4, dt))


@pytest.mark.parametrize("dt", DTYPES + ("complex128",))
def test_schur_reconstructs_and_matches_scipy(dt):
    a = _randn((5, 5), dt)
    t, q = L.schur(a)
    want_t, want_q = sl.schur(a, output="complex" if np.dtype(dt).kind == "c" else "real")
    _close(t, want_t, dt, 50)
    _close(q, want_q, dt, 50)
    t, q = np.asarray(t), np.asarray(q)
    _close(q @ t @ q.conj().T, a, dt, 50)
    assert np.all(np.tril(t, -2) == 0)
    (t_only,) = L.schur(a, compute_schur_vectors=False)
    _close(t_only, t, dt, 50)
    # NB-marked extension: sorting with SciPy's predicates.
    ts, qs = L.schur(a, sort_eig_vals=True, select_callable="lhp")
    nneg = int(np.sum(np.linalg.eigvals(a).real < 0))
    diag = np.diag(np.asarray(ts)).real
    assert np.all(diag[:nneg] < 0) and np.all(diag[nneg:] >= 0)
    _close(np.asarray(qs) @ np.asarray(ts) @ np.asarray(qs).conj().T, a, dt, 50)
    with pytest.raises(ValueError, match="select_callable"):
        L.schur(a, sort_eig_vals=True)


def test_schur_and_friends_have_no_derivatives_as_in_jax():
    a = rng.normal(size=(3, 3))
    for f in (
        lambda x: L.schur(x)[0].sum(),
        lambda x: L.hessenberg(x)[0].sum(),
        lambda x: L.tridiagonal(x)[0].sum(),
        lambda x: L.householder_product(x, x[0, :2]).sum(),
        lambda x: L.symmetric_product(x, x).sum(),
        lambda x: L.cholesky_update(x, x[0]).sum(),
    ):
        with pytest.raises(NotImplementedError, match="Differentiation rule"):
            morphax.grad(f)(a)


@pytest.mark.parametrize("dt", DTYPES)
def test_cholesky_update(dt):
    a = rng.normal(size=(4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    r = sl.cholesky(spd).astype(dt)  # upper, A = R^T R
    w = rng.normal(size=4).astype(dt)
    got = np.asarray(L.cholesky_update(r, w))
    _close(got, sl.cholesky(spd + np.outer(w, w)), dt, 20)
    assert got.dtype == np.dtype(dt)
    _close(L.cholesky_update(r, np.zeros(4, dt)), r, dt)
    with pytest.raises(ValueError, match="same size"):
        L.cholesky_update(r, w[:3])
    with pytest.raises(TypeError, match="real floating"):
        L.cholesky_update(r.astype(np.complex128), w.astype(np.complex128))


@pytest.mark.parametrize("dt", DTYPES)
def test_symmetric_product(dt):
    a = rng.normal(size=(2, 4, 3)).astype(dt)
    c = rng.normal(size=(2, 4, 4))
    c = (c + np.swapaxes(c, -1, -2)).astype(dt)
    want = 0.5 * a @ np.swapaxes(a, -1, -2) + 2.0 * c
    _close(L.symmetric_product(a, c, alpha=0.5, beta=2.0), want, dt, 10)
    # Only the lower triangle counts: symmetrize_output mirrors it, whatever the upper holds.
    c_low = np.tril(c)
    sym = np.asarray(L.symmetric_product(a, c_low, alpha=0.5, beta=2.0, symmetrize_output=True))
    _close(sym, np.tril(want) + np.swapaxes(np.tril(want, -1), -1, -2), dt, 10)
    with pytest.raises(ValueError, match="square matrix"):
        L.symmetric_product(a, c[..., :3])


def _tridiag(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


@pytest.mark.parametrize("dt", DTYPES + ("complex64",))
def test_tridiagonal_solve_values(dt):
    m = 6
    dl, du = _randn((m,), dt), _randn((m,), dt)
    d = (_randn((m,), dt) + 4).astype(dt)
    b = _randn((m, 3), dt)
    want = np.linalg.solve(_tridiag(dl, d, du), b)
    _close(L.tridiagonal_solve(dl, d, du, b), want, dt, 10)
    _close(L.tridiagonal_solve(dl, d, du, b, perturb_singular=True), want, dt, 10)
    # The unused corners are never read.
    dl2, du2 = dl.copy(), du.copy()
    dl2[0], du2[-1] = 99, -99
    _close(L.tridiagonal_solve(dl2, d, du2, b), want, dt, 10)


def test_tridiagonal_solve_singular_systems():
    z = np.zeros(4, np.float32)
    ones = np.ones((4, 2), np.float32)
    assert np.all(np.isnan(np.asarray(L.tridiagonal_solve(z, z, z, ones))))
    # Perturbed pivots: the zero matrix's pivots become the smallest normal number (JAX's answer).
    big = np.asarray(L.tridiagonal_solve(z, z, z, ones, perturb_singular=True))
    np.testing.assert_array_equal(big, np.full((4, 2), 1 / np.finfo(np.float32).tiny, np.float32))
    # A zero pivot among nonzero ones is nudged by eps * max|U|.
    d = np.array([1, 0, 1], np.float32)
    zero3 = np.zeros(3, np.float32)
    x = np.asarray(L.tridiagonal_solve(zero3, d, zero3, np.ones((3, 1), np.float32), perturb_singular=True))
    np.testing.assert_array_equal(x[:, 0], [1, 1 / np.finfo(np.float32).eps, 1])
    # A nearly singular system is solved as it stands (known answer, from JAX 0.10.2).
    dl = np.array([0, 1e-3, 1], np.float32)
    du = np.array([1e-3, 0, 0], np.float32)
    x = L.tridiagonal_solve(
        dl, np.array([1, 1e-30, 1], np.float32), du, np.ones((3, 1), np.float32), perturb_singular=True
    )
    np.testing.assert_allclose(np.asarray(x)[:, 0], [999.99994, -998999.9, 999000.9], rtol=1e-6)


def test_tridiagonal_solve_errors():
    v = np.ones(3)
    with pytest.raises(TypeError, match="same shape"):
        L.tridiagonal_solve(v, v, v[:2], np.ones((3, 2)))
    with pytest.raises(TypeError, match="leading ndim-1"):
        L.tridiagonal_solve(v, v, v, np.ones((4, 2)))
    with pytest.raises(TypeError, match="one dtype"):
        L.tridiagonal_solve(v, v, v, np.ones((3, 2), np.float32))


def _tri_system(k=2, batch=()):
    dl, du = rng.normal(size=batch + (5,)), rng.normal(size=batch + (5,))
    d = rng.normal(size=batch + (5,)) + 4
    return dl, d, du, rng.normal(size=batch + (5, k))


def test_tridiagonal_solve_gradients():
    dl, d, du, b = _tri_system()
    check_grads(L.tridiagonal_solve, (dl, d, du, b), order=2, modes=("fwd", "rev"))
    check_grads(lambda b: L.tridiagonal_solve(dl, d, du, b), (b,), order=1, modes=("fwd", "rev"))
    # Gradients agree with those of the dense solve.
    g = morphax.grad(lambda d, b: jnp.sum(L.tridiagonal_solve(dl, d, du, b) ** 2), argnums=(0, 1))(d, b)
    dense = morphax.grad(
        lambda d, b: jnp.sum(
            jnp.linalg.solve(jnp.diag(d) + jnp.diag(dl[1:], -1) + jnp.diag(du[:-1], 1), b) ** 2
        ),
        argnums=(0, 1),
    )(d, b)
    for x, y in zip(g, dense):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-10)


def test_vmap_matches_loop_and_jit():
    a = rng.normal(size=(3, 4, 4))
    for fn in (L.hessenberg, L.schur, lambda x: L.tridiagonal(x + np.swapaxes(x, -1, -2))):
        got = morphax.vmap(fn)(a)
        for i in range(3):
            want = fn(a[i])
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g)[i], np.asarray(w), atol=1e-12)
        jitted = morphax.jit(fn)(a[0])
        for g, w in zip(jitted, fn(a[0])):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-12)
    # Two operands, one of them shared: householder_product over a batch of taus.
    raw = sl.qr(a[0], mode="raw")[0][0]
    taus = rng.normal(size=(3, 4)) * 0.3
    got = morphax.vmap(L.householder_product, in_axes=(None, 0))(raw, taus)
    for i in range(3):
        np.testing.assert_allclose(
            np.asarray(got)[i], np.asarray(L.householder_product(raw, taus[i])), atol=1e-12
        )
    # cholesky_update under vmap (JAX has no rule here; morphax batches it).
    r = np.stack([sl.cholesky(m @ m.T + 4 * np.eye(4)) for m in a])
    w = rng.normal(size=(3, 4))
    got = morphax.vmap(L.cholesky_update)(r, w)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(got)[i], np.asarray(L.cholesky_update(r[i], w[i])), atol=1e-12)
    # tridiagonal_solve with shared diagonals and batched right-hand sides, and fully batched.
    dl, d, du, b = _tri_system(batch=(3,))
    got = morphax.vmap(L.tridiagonal_solve, in_axes=(None, None, None, 0))(dl[0], d[0], du[0], b)
    got2 = morphax.jit(morphax.vmap(L.tridiagonal_solve))(dl, d, du, b)
    for i in range(3):
        want = np.linalg.solve(_tridiag(dl[0], d[0], du[0]), b[i])
        np.testing.assert_allclose(np.asarray(got)[i], want, atol=1e-12)
        want = np.linalg.solve(_tridiag(dl[i], d[i], du[i]), b[i])
        np.testing.assert_allclose(np.asarray(got2)[i], want, atol=1e-12)


@pytest.mark.parametrize("dt", DTYPES + ("complex64",))
@pytest.mark.parametrize("shape", [(4, 4), (6, 3)])
def test_qdwh_polar(dt, shape):
    x = _randn(shape, dt)
    u, h, num_iters, converged = L.qdwh(x)
    assert u.dtype == x.dtype and h.dtype == x.dtype and converged.dtype == np.bool_
    assert bool(converged) and 0 < int(num_iters) <= 10 and num_iters.weak_type
    want_u, want_h = sl.polar(x.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64))
    _close(u, want_u, dt, 50)
    _close(h, want_h, dt, 50)
    _close(np.asarray(u) @ np.asarray(h), x, dt, 50)


def test_qdwh_options_and_errors():
    x = rng.normal(size=(5, 3))
    u, h, n, ok = L.qdwh(x, max_iterations=2)
    assert int(n) == 2 and not bool(ok)
    # A zero-padded matrix with its true shape gives the true matrix's factors in the corner.
    pad = np.zeros((7, 4))
    pad[:5, :3] = x
    up, hp, _, ok = L.qdwh(pad, dynamic_shape=(5, 3))
    want_u, want_h = sl.polar(x)
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(up)[:5, :3], want_u, atol=1e-10)
    np.testing.assert_allclose(np.asarray(hp)[:3, :3], want_h, atol=1e-10)
    u0, h0, _, ok = L.qdwh(np.zeros((3, 2)))
    assert bool(ok) and not np.any(np.asarray(u0)) and not np.any(np.asarray(h0))
    jitted = morphax.jit(L.qdwh)(x)
    np.testing.assert_allclose(np.asarray(jitted[0]), want_u, atol=1e-10)
    batched = morphax.vmap(lambda m: L.qdwh(m)[0])(np.stack([x, 2 * x]))
    np.testing.assert_allclose(np.asarray(batched)[1], want_u, atol=1e-10)
    with pytest.raises(ValueError, match="M >= N"):
        L.qdwh(x.T)
    with pytest.raises(ValueError, match="vmap"):
        L.qdwh(np.stack([x, x]))
    with pytest.raises(TypeError, match="statically"):
        L.qdwh(x, max_iterations=2.5)


def test_qdwh_differentiates_forward_only_as_in_jax():
    x = rng.normal(size=(4, 3))
    check_grads(lambda x: L.qdwh(x)[:2], (x,), order=1, modes=("fwd",))
    with pytest.raises(ValueError, match="Reverse-mode"):
        morphax.grad(lambda x: L.qdwh(x)[0].sum())(x)
