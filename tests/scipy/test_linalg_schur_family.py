"""`morphax.scipy.linalg`'s Schur family against `scipy.linalg` in float32 and float64: schur (real
and complex), rsf2csf (with check_grads: JAX differentiates it), hessenberg with Q, sqrtm, funm
(with SciPy's error estimate) and solve_sylvester (both methods, the NaN guard); dtypes as JAX's
(sqrtm and funm are complex), batching against a loop, jit, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import morphax
import morphax.numpy as jnp
from morphax.scipy import linalg as ml
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
DTYPES = ("float32", "float64")
TOL = {"float32": 3e-5, "float64": 1e-12}


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


def _close(got, want, dt, scale=1.0):
    np.testing.assert_allclose(np.asarray(got), want, rtol=TOL[dt] * scale, atol=TOL[dt] * scale)


def _complex(dt):
    return np.dtype(np.complex64 if dt == "float32" else np.complex128)


def _positive_spectrum(n, dt):
    """A non-normal matrix with eigenvalues in the right half plane (principal roots agree with
    SciPy's whatever the branch conventions)."""
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    t = np.triu(rng.normal(size=(n, n)) * 0.5, 1) + np.diag(rng.uniform(1, 3, n))
    return (q @ t @ q.T).astype(dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_schur_real_and_complex(dt):
    a = rng.normal(size=(5, 5)).astype(dt)
    t, z = ml.schur(a)
    want_t, want_z = sl.schur(a)
    assert t.dtype == np.dtype(dt)
    _close(t, want_t, dt, 30)
    _close(z, want_z, dt, 30)
    tc, zc = ml.schur(a, output="complex")
    assert tc.dtype == _complex(dt) and zc.dtype == _complex(dt)
    tc, zc = np.asarray(tc), np.asarray(zc)
    _close(zc @ tc @ zc.conj().T, a, dt, 30)
    assert np.all(np.tril(tc, -1) == 0)
    # Integers go complex only on request (int32 to complex64 even with x64, as in JAX).
    assert ml.schur(np.eye(3, dtype=np.int32), output="complex")[0].dtype == np.complex64
    with pytest.raises(TypeError, match="int32"):
        ml.schur(np.eye(3, dtype=np.int32))
    with pytest.raises(ValueError, match="'real' or 'complex'"):
        ml.schur(a, output="x")


@pytest.mark.parametrize("dt", DTYPES)
def test_rsf2csf(dt):
    a = rng.normal(size=(5, 5)).astype(dt)
    t, z = sl.schur(a)
    got_t, got_z = ml.rsf2csf(t, z)
    want_t, want_z = sl.rsf2csf(t, z)
    assert got_t.dtype == _complex(dt)
    _close(got_t, want_t, dt, 30)
    _close(got_z, want_z, dt, 30)
    gt, gz = np.asarray(got_t), np.asarray(got_z)
    assert np.all(np.tril(gt, -1) == 0)
    _close(gz @ gt @ gz.conj().T, a, dt, 30)
    # Batched T with a shared Z (broadcast), against a loop.
    t2 = np.stack([t, 2 * t])
    bt, bz = ml.rsf2csf(t2, z)
    for i in range(2):
        wt, wz = sl.rsf2csf(t2[i], z)
        _close(np.asarray(bt)[i], wt, dt, 30)
        _close(np.asarray(bz)[i], wz, dt, 30)
    with pytest.raises(ValueError, match="must match"):
        ml.rsf2csf(t, z[:3, :3])


def test_rsf2csf_gradients():
    # Two complex conjugate pairs: the derivative is taken along the quasi-triangular pattern only
    # (a perturbation of an exact zero between blocks would switch a rotation on).
    q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    blocks = sl.block_diag([[1.0, 2.0], [-1.5, 1.0]], [[-0.5, 1.0], [-2.0, -0.5]])
    t, z = sl.schur(q @ (blocks + np.triu(rng.normal(size=(4, 4)), 2)) @ q.T)
    pattern = (t != 0).astype(float)
    assert pattern[1, 0] and pattern[3, 2] and not pattern[2, 1]

    def f(t, z):
        ct, cz = ml.rsf2csf(t * pattern, z)
        return jnp.real(ct), jnp.imag(ct), jnp.real(cz), jnp.imag(cz)

    check_grads(f, (t, z), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("dt", DTYPES)
def test_hessenberg(dt):
    a = rng.normal(size=(5, 5)).astype(dt)
    h, q = ml.hessenberg(a, calc_q=True)
    want_h, want_q = sl.hessenberg(a, calc_q=True)
    _close(h, want_h, dt, 30)
    _close(q, want_q, dt, 30)
    _close(ml.hessenberg(a), want_h, dt, 30)
    h, q = np.asarray(h), np.asarray(q)
    _close(q @ h @ q.T, a, dt, 30)
    assert np.all(np.tril(h, -2) == 0)
    # Batched, and the edge sizes.
    b = rng.normal(size=(3, 4, 4)).astype(dt)
    bh, bq = ml.hessenberg(b, calc_q=True)
    for i in range(3):
        wh, wq = sl.hessenberg(b[i], calc_q=True)
        _close(np.asarray(bh)[i], wh, dt, 30)
        _close(np.asarray(bq)[i], wq, dt, 30)
    h1, q1 = ml.hessenberg(a[:1, :1], calc_q=True)
    np.testing.assert_array_equal(np.asarray(q1), [[1]])
    h0, q0 = ml.hessenberg(np.zeros((0, 0), dt), calc_q=True)
    assert h0.shape == (0, 0) and q0.shape == (0, 0)
    with pytest.raises(TypeError, match="int32"):
        ml.hessenberg(np.eye(3, dtype=np.int32))


@pytest.mark.parametrize("dt", DTYPES)
def test_sqrtm(dt):
    a = _positive_spectrum(5, dt)
    s = ml.sqrtm(a)
    assert s.dtype == _complex(dt)
    _close(s, sl.sqrtm(a.astype(np.float64)), dt, 30)
    # Any real matrix: a square root (the branch of a negative eigenvalue follows the Schur form).
    g = rng.normal(size=(4, 4)).astype(dt)
    r = np.asarray(ml.sqrtm(g))
    _close(r @ r, g, dt, 30)
    # A singular triangular block: the zero-over-zero entries are 0 (JAX and SciPy).
    np.testing.assert_array_equal(np.asarray(ml.sqrtm(np.zeros((3, 3), dt))), np.zeros((3, 3)))
    with pytest.raises(NotImplementedError, match="blocksize"):
        ml.sqrtm(a, blocksize=2)
    with pytest.raises(ValueError, match="square"):
        ml.sqrtm(a[:, :3])


def test_sqrtm_batches_and_jits():
    a = np.stack([_positive_spectrum(4, "float64") for _ in range(3)])
    got = morphax.vmap(ml.sqrtm)(a)
    stacked = ml.sqrtm(a)  # NB: leading batch dims work without vmap too
    jitted = morphax.jit(ml.sqrtm)(a[0])
    for i in range(3):
        want = sl.sqrtm(a[i])
        _close(np.asarray(got)[i], want, "float64", 30)
        _close(np.asarray(stacked)[i], want, "float64", 30)
    _close(jitted, sl.sqrtm(a[0]), "float64", 30)


@pytest.mark.parametrize("dt", DTYPES)
def test_funm(dt):
    a = rng.normal(size=(4, 4)).astype(dt)
    a64 = a.astype(np.float64)
    for f, g in ((jnp.exp, np.exp), (jnp.sin, np.sin), (lambda x: x * x + 1, lambda x: x * x + 1)):
        got = ml.funm(a, f)
        assert got.dtype == _complex(dt)
        _close(got, sl.funm(a64, g), dt, 100)
    _close(ml.funm(a, jnp.exp), sl.expm(a64), dt, 100)
    f, err = ml.funm(a, jnp.exp, disp=False)
    want_f, want_err = sl.funm(a64, np.exp, disp=False)
    _close(f, want_f, dt, 100)
    assert err.dtype == np.finfo(dt).dtype
    if dt == "float64":
        np.testing.assert_allclose(float(err), want_err, rtol=1e-6)
    jitted = morphax.jit(lambda m: ml.funm(m, jnp.cos))(a)
    _close(jitted, sl.funm(a64, np.cos), dt, 100)
    with pytest.raises(ValueError, match="square"):
        ml.funm(np.stack([a, a]), jnp.exp)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(dt, method):
    a = rng.normal(size=(4, 4)).astype(dt)
    b = rng.normal(size=(3, 3)).astype(dt)
    c = rng.normal(size=(4, 3)).astype(dt)
    want = sl.solve_sylvester(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64))
    x = ml.solve_sylvester(a, b, c, method=method)
    assert x.dtype == np.dtype(dt)
    _close(x, want, dt, 300 if method == "eigen" else 100)
    xc = ml.solve_sylvester(a, b, c.astype(_complex(dt)), method=method)
    assert xc.dtype == _complex(dt)
    _close(xc, want, dt, 300 if method == "eigen" else 100)


def test_solve_sylvester_complex_batched_and_guard():
    a = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    b = rng.normal(size=(2, 2)) + 1j * rng.normal(size=(2, 2))
    c = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    _close(ml.solve_sylvester(a, b, c), sl.solve_sylvester(a, b, c), "float64", 100)
    # Batched A against a shared B and C (broadcast), vmap and jit.
    aa = rng.normal(size=(2, 3, 3))
    br, cr = b.real, c.real
    got = ml.solve_sylvester(aa, br, cr)
    vm = morphax.vmap(ml.solve_sylvester, in_axes=(0, None, None))(aa, br, cr)
    jt = morphax.jit(ml.solve_sylvester)(aa[1], br, cr)
    for i in range(2):
        want = sl.solve_sylvester(aa[i], br, cr)
        _close(np.asarray(got)[i], want, "float64", 100)
        _close(np.asarray(vm)[i], want, "float64", 100)
    _close(jt, sl.solve_sylvester(aa[1], br, cr), "float64", 100)
    # Integers promote; an eigenvalue of A opposite one of B makes the problem singular: NaNs.
    ai = np.array([[1, 2], [3, 4]])
    assert ml.solve_sylvester(ai, ai, ai).dtype == np.float64
    assert np.all(np.isnan(np.asarray(ml.solve_sylvester(ai, -ai, ai))))
    with pytest.raises(ValueError, match="Incompatible shapes"):
        ml.solve_sylvester(ai, ai, np.ones((3, 2)))
    with pytest.raises(ValueError, match="Unrecognized method"):
        ml.solve_sylvester(ai, ai, ai, method="x")


def test_no_derivatives_through_schur_as_in_jax():
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    for f in (
        lambda x: jnp.real(ml.sqrtm(x)).sum(),
        lambda x: ml.schur(x)[0].sum(),
        lambda x: ml.hessenberg(x).sum(),
        lambda x: ml.solve_sylvester(x, x, x).sum(),
    ):
        with pytest.raises(NotImplementedError, match="Differentiation rule"):
            morphax.grad(f)(a)


def test_jit_matches_eager():
    a = rng.normal(size=(4, 4))
    t, z = sl.schur(a)
    for fn, args in (
        (ml.schur, (a,)),
        (lambda m: ml.schur(m, output="complex"), (a,)),
        (lambda m: ml.hessenberg(m, calc_q=True), (a,)),
        (ml.rsf2csf, (t, z)),
    ):
        for g, w in zip(morphax.jit(fn)(*args), fn(*args)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-12)
