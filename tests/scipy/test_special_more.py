"""The rest of `morphax.scipy.special` against SciPy: bernoulli, bessel_jn, dawsn, erfcx, exp1,
expi, expn, fresnel, hyp1f1, hyp2f1, owens_t, sici, spence, sph_harm_y, wofz. Values on random
inputs over each function's domain in float32 and float64, edge points (0, the poles, +-inf,
nan) with JAX's conventions where they differ from SciPy's, float64 finite differences
(check_grads) wherever JAX differentiates, and one jit and one vmap case per function."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import morphax
import morphax.numpy as jnp
from morphax.scipy import special as ms
from morphax.test_util import check_grads

nan, inf = np.nan, np.inf


def _first(f):
    return lambda *args: f(*args)[0]


def _second(f):
    return lambda *args: f(*args)[1]


# name -> (morphax function, SciPy reference, argument domains, check_grads order (0: none),
# float32 (rtol, atol), float64 (rtol, atol)). Functions of several outputs are split into one
# case per output.
CASES = {
    "dawsn": (ms.dawsn, ss.dawsn, [(-9, 9)], 2, (5e-6, 1e-7), (1e-13, 1e-300)),
    "erfcx": (ms.erfcx, ss.erfcx, [(-3, 40)], 2, (1e-5, 0), (5e-13, 0)),
    "exp1": (ms.exp1, ss.exp1, [(0.01, 40)], 2, (1e-5, 0), (1e-13, 0)),
    "expi": (ms.expi, ss.expi, [(-40, 60)], 2, (2e-5, 0), (1e-13, 0)),
    "fresnel_s": (
        _first(ms.fresnel),
        lambda x: ss.fresnel(x)[0],
        [(-8, 8)],
        2,
        (1e-5, 1e-7),
        (1e-13, 1e-300),
    ),
    "fresnel_c": (
        _second(ms.fresnel),
        lambda x: ss.fresnel(x)[1],
        [(-8, 8)],
        2,
        (1e-5, 1e-7),
        (1e-13, 1e-300),
    ),
    "sici_si": (_first(ms.sici), lambda x: ss.sici(x)[0], [(-30, 30)], 2, (1e-5, 1e-7), (1e-13, 1e-300)),
    "sici_ci": (_second(ms.sici), lambda x: ss.sici(x)[1], [(0.05, 30)], 2, (2e-5, 1e-6), (1e-12, 1e-15)),
    "spence": (ms.spence, ss.spence, [(0.01, 12)], 2, (1e-5, 1e-7), (1e-13, 1e-300)),
    "owens_t": (ms.owens_t, ss.owens_t, [(-4, 4), (-5, 5)], 2, (1e-5, 1e-8), (1e-12, 1e-300)),
    "hyp1f1": (ms.hyp1f1, ss.hyp1f1, [(0.5, 4), (0.5, 4), (-2, 8)], 1, (2e-5, 1e-7), (1e-12, 1e-300)),
    "hyp2f1": (ms.hyp2f1, ss.hyp2f1, [(0.2, 3), (0.2, 3), (0.5, 5), (-0.9, 0.85)], 1, (2e-5, 0), (1e-12, 0)),
}


def _args(domains, dtype, n=24, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, size=n).astype(dtype) for lo, hi in domains]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_against_scipy(name, dtype):
    fn, ref, domains, _, tol32, tol64 = CASES[name]
    args = _args(domains, dtype)
    want = ref(*[a.astype(np.float64) for a in args])
    with morphax.enable_x64(dtype == np.float64):
        got = fn(*args)
    assert got.dtype == dtype
    rtol, atol = tol32 if dtype == np.float32 else tol64
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[3]))
def test_derivatives(name):
    fn, _, domains, order, _, _ = CASES[name]
    args = [a[:3] for a in _args(domains, np.float64, seed=1)]
    with morphax.enable_x64():
        check_grads(fn, args, order=order, modes=("fwd", "rev"), rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_and_vmap(name):
    fn, _, domains, _, _, _ = CASES[name]
    args = _args(domains, np.float32, n=6, seed=2)
    eager = np.asarray(fn(*args))
    np.testing.assert_allclose(np.asarray(morphax.jit(fn)(*args)), eager, rtol=2e-6, atol=1e-30)
    mapped = morphax.vmap(fn)(*[a.reshape(3, 2) for a in args])
    np.testing.assert_allclose(np.asarray(mapped).ravel(), eager, rtol=2e-6, atol=1e-30)


# ---------------------------------------------------------------------------- expn (integer n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expn_against_scipy(dtype):
    rng = np.random.default_rng(3)
    n = rng.integers(0, 9, 40)
    x = np.concatenate([rng.uniform(0.01, 1, 20), rng.uniform(1, 40, 20)])
    want = ss.expn(n, x)
    with morphax.enable_x64(dtype == np.float64):
        got = ms.expn(n.astype(dtype), x.astype(dtype))
        large = ms.expn(np.array([5000.0, 6000.0], dtype), np.array([2.0, 0.5], dtype))
    assert got.dtype == dtype
    rtol = 2e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=1e-30)
    # n >= 5000: the asymptotic expansion
    np.testing.assert_allclose(np.asarray(large, np.float64), ss.expn([5000, 6000], [2.0, 0.5]), rtol=rtol)


def test_expn_derivative_jit_and_vmap():
    with morphax.enable_x64():
        n = np.array([1.0, 2.0, 4.0])
        x = np.array([0.4, 1.7, 3.0])
        check_grads(lambda x: ms.expn(n, x), (x,), order=2, modes=("fwd", "rev"), rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(np.asarray(morphax.grad(ms.expn, argnums=1)(3.0, 1.5)), -ss.expn(2, 1.5))
    n, x = np.array([1.0, 2.0, 3.0, 5.0], np.float32), np.array([0.5, 2.0, 0.1, 7.0], np.float32)
    eager = np.asarray(ms.expn(n, x))
    np.testing.assert_allclose(np.asarray(morphax.jit(ms.expn)(n, x)), eager, rtol=2e-6)
    np.testing.assert_allclose(np.asarray(morphax.vmap(ms.expn)(n, x)), eager, rtol=2e-6)
    np.testing.assert_allclose(
        np.asarray(morphax.vmap(ms.expn, in_axes=(None, 0))(2.0, x)), ss.expn(2, x), rtol=2e-5
    )


# ----------------------------------------------------------------------------------- wofz


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_wofz_and_complex_erfcx(dtype):
    rng = np.random.default_rng(4)
    z = (rng.uniform(-6, 6, 40) + 1j * rng.uniform(-3, 6, 40)).astype(dtype)
    with morphax.enable_x64(dtype == np.complex128):
        got = ms.wofz(z)
        got_erfcx = ms.erfcx(z)
        real_input = ms.wofz(np.array([0.0, 1.0, -2.5], np.float32))
    assert got.dtype == dtype and got_erfcx.dtype == dtype
    assert real_input.dtype == np.complex64 or dtype == np.complex128
    rtol = 2e-5 if dtype == np.complex64 else 5e-13
    z64 = z.astype(np.complex128)
    np.testing.assert_allclose(np.asarray(got), ss.wofz(z64), rtol=rtol)
    np.testing.assert_allclose(np.asarray(got_erfcx), ss.erfcx(z64), rtol=rtol)
    np.testing.assert_allclose(np.asarray(real_input), ss.wofz([0.0, 1.0, -2.5]), rtol=2e-6)


def test_wofz_derivative_jit_and_vmap():
    z = np.array([0.3 + 0.4j, -1.2 + 2.0j, 2.0 - 0.5j])
    with morphax.enable_x64():
        check_grads(ms.wofz, (z,), order=2, modes=("fwd", "rev"), rtol=1e-3, atol=1e-6)
        # w'(z) = -2 z w(z) + 2i / sqrt(pi), against SciPy's w
        _, tangent = morphax.jvp(ms.wofz, (z,), (np.ones_like(z),))
        np.testing.assert_allclose(np.asarray(tangent), -2 * z * ss.wofz(z) + 2j / np.sqrt(np.pi), rtol=1e-12)
    z32 = z.astype(np.complex64)
    eager = np.asarray(ms.wofz(z32))
    np.testing.assert_allclose(np.asarray(morphax.jit(ms.wofz)(z32)), eager, rtol=2e-6)
    np.testing.assert_allclose(np.asarray(morphax.vmap(ms.wofz)(z32)), eager, rtol=2e-6)


# ------------------------------------------------------------------------- hypergeometric


def test_hyp1f1_asymptotic_range_and_conventions():
    with morphax.enable_x64():
        a, b, x = np.array([0.7, 2.5, 1.5]), np.array([1.3, 0.8, 3.0]), np.array([120.0, 150.0, 300.0])
        np.testing.assert_allclose(np.asarray(ms.hyp1f1(a, b, x)), ss.hyp1f1(a, b, x), rtol=1e-12)
    got = ms.hyp1f1(
        np.array([0.0, 2.0, 1.0, 0.0]), np.array([0.0, 2.0, 0.0, 3.0]), np.array([1.0, 1.5, 1.0, 9.0])
    )
    # 1F1(0; 0; x) = 1 (JAX's convention; SciPy: inf), a == b gives exp(x), b == 0 gives inf
    np.testing.assert_allclose(np.asarray(got), [1.0, np.exp(1.5), inf, 1.0], rtol=1e-6)


def test_hyp2f1_special_cases():
    # (a, b, c, x): terminating polynomials, Euler's transformation (c - a - b <= -1), x = 1
    # (Gauss's sum and its pole), closed forms for b == c and a == c, the digamma expansion near
    # x = 1 with an integer c - a - b, and x > 1 or c a non-positive integer (inf)
    rows = [
        (-2.0, 3.0, 2.0, 0.7), (-3.0, 2.5, 1.5, -0.7), (0.5, -4.0, 2.0, 0.95), (2.0, 1.5, 1.0, 0.6),
        (0.5, 1.0, 3.5, 1.0), (1.0, 2.0, 3.0, 1.0), (1.5, 2.0, 2.0, 0.3), (2.0, 0.5, 2.0, -0.4),
        (0.5, 0.5, 1.5, 0.95), (1.5, 2.0, 3.5, 0.97), (2.0, 3.0, 2.5, 0.95), (1.0, 1.0, 2.0, 1.5),
        (1.0, 1.0, 0.0, 0.5), (1.0, 1.0, -2.0, 0.5), (0.0, 2.0, 3.0, 0.9),
    ]  # fmt: skip
    a, b, c, x = (np.array(col) for col in zip(*rows))
    with morphax.enable_x64():
        got = np.asarray(ms.hyp2f1(a, b, c, x))
    # 1e-8: near x = 1 with a non-integer c - a - b the Taylor series stops at 250 terms, as JAX's
    np.testing.assert_allclose(got, ss.hyp2f1(a, b, c, x), rtol=1e-8)


def test_hypergeometric_parameter_derivatives_against_scipy():
    h = 1e-6
    with morphax.enable_x64():
        grads = morphax.grad(ms.hyp1f1, argnums=(0, 1, 2))(1.3, 2.2, 0.8)
        want = [(ss.hyp1f1(*(np.array([1.3, 2.2, 0.8]) + h * e)) - ss.hyp1f1(*(np.array([1.3, 2.2, 0.8]) - h * e))) / (2 * h) for e in np.eye(3)]  # fmt: skip
        np.testing.assert_allclose(np.asarray(grads), want, rtol=1e-6)
        point = np.array([0.7, 1.4, 2.3, 0.4])
        grads = morphax.grad(ms.hyp2f1, argnums=(0, 1, 2, 3))(*point)
        want = [(ss.hyp2f1(*(point + h * e)) - ss.hyp2f1(*(point - h * e))) / (2 * h) for e in np.eye(4)]
        np.testing.assert_allclose(np.asarray(grads), want, rtol=1e-6)


# --------------------------------------------------------------------------------- bernoulli


def test_bernoulli():
    np.testing.assert_allclose(np.asarray(ms.bernoulli(30)), ss.bernoulli(30), rtol=1e-6, atol=0)
    assert ms.bernoulli(30).dtype == np.float32 and ms.bernoulli(0).shape == (1,)
    np.testing.assert_array_equal(np.asarray(ms.bernoulli(2)), np.array([1.0, -0.5, 1 / 6.0], np.float32))
    with morphax.enable_x64():
        got = ms.bernoulli(200)
        assert got.dtype == np.float64
        # SciPy truncates zeta(2k) (relative error ~1e-12); these are correctly rounded rationals
        np.testing.assert_allclose(np.asarray(got), ss.bernoulli(200), rtol=1e-10)
        assert float(got[4]) == -1 / 30 and float(got[14]) == 7 / 6
    # float32 overflows past B_66 to signed infinities; odd orders stay 0
    tail = np.asarray(ms.bernoulli(70))
    assert np.isneginf(tail[68]) and np.isposinf(tail[70]) and tail[69] == 0.0
    with pytest.raises(ValueError, match="non-negative"):
        ms.bernoulli(-1)
    with pytest.raises(TypeError):
        ms.bernoulli(2.5)


# --------------------------------------------------------------------------------- bessel_jn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bessel_jn_against_scipy(dtype):
    z = np.random.default_rng(5).uniform(-20, 20, 24).astype(dtype)
    z[:4] = [0.0, 0.05, -0.7, 1.0]
    with morphax.enable_x64(dtype == np.float64):
        got = ms.bessel_jn(z, v=5)
    want = np.stack([ss.jv(k, z.astype(np.float64)) for k in range(6)])
    assert got.shape == (6, 24) and got.dtype == dtype
    atol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0, atol=atol)
    # z = 0 exactly: J_0 = 1 and the rest 0 (JAX: nan); shapes follow z
    np.testing.assert_array_equal(np.asarray(ms.bessel_jn(0.0, v=2)), [1.0, 0.0, 0.0])
    assert ms.bessel_jn(np.ones((2, 3), dtype), v=1, n_iter=30).shape == (2, 2, 3)
    # half precision recurs in float32 (JAX's float16 recurrence overflows)
    half = ms.bessel_jn(np.array([0.5, 3.0], np.float16), v=2)
    assert half.dtype == np.float16
    np.testing.assert_allclose(
        np.asarray(half, np.float64), [ss.jv(k, [0.5, 3.0]) for k in range(3)], atol=2e-3
    )


def test_bessel_jn_derivative_jit_and_vmap():
    z = np.array([0.6, 2.5, 7.0])
    with morphax.enable_x64():
        check_grads(lambda z: ms.bessel_jn(z, v=2), (z,), order=2, modes=("fwd", "rev"), rtol=1e-3, atol=1e-6)
        # J_0' = -J_1
        np.testing.assert_allclose(
            np.asarray(morphax.grad(lambda z: ms.bessel_jn(z, v=0)[0])(2.5)), -ss.j1(2.5)
        )
    z32 = z.astype(np.float32)
    fn = lambda z: ms.bessel_jn(z, v=3)  # noqa: E731
    eager = np.asarray(fn(z32))
    np.testing.assert_allclose(np.asarray(morphax.jit(fn)(z32)), eager, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(morphax.vmap(fn)(z32)), eager.T, rtol=2e-6, atol=1e-7)
    with pytest.raises(ValueError, match="complex"):
        ms.bessel_jn(1j, v=1)


# -------------------------------------------------------------------------------- sph_harm_y


def _harmonic_args(count=30, seed=6, n_top=7):
    rng = np.random.default_rng(seed)
    n = rng.integers(0, n_top, count)
    m = np.array([rng.integers(-k, k + 1) for k in n])
    return n, m, rng.uniform(0, np.pi, count), rng.uniform(0, 2 * np.pi, count)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sph_harm_y_against_scipy(dtype):
    n, m, theta, phi = _harmonic_args()
    with morphax.enable_x64(dtype == np.float64):
        got = ms.sph_harm_y(n, m, theta.astype(dtype), phi.astype(dtype))
        scalar = ms.sph_harm_y(3, -2, dtype(0.4), dtype(1.1))
    assert got.dtype == (np.complex64 if dtype == np.float32 else np.complex128)
    atol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(np.asarray(got), ss.sph_harm_y(n, m, theta, phi), rtol=0, atol=atol)
    np.testing.assert_allclose(complex(scalar), ss.sph_harm_y(3, -2, 0.4, 1.1), atol=atol)
    # the poles and a broadcast scalar angle; n_max clips larger degrees, as in JAX
    poles = ms.sph_harm_y(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([0.0, np.pi, np.pi]), 0.3)
    np.testing.assert_allclose(
        np.asarray(poles), ss.sph_harm_y([0, 2, 3], [0, 1, 0], [0.0, np.pi, np.pi], 0.3), atol=2e-6
    )
    low = ms.sph_harm_y(
        np.array([1, 1, 0]), np.array([-1, 1, 0]), np.array([0.3, 1.0, 2.0]), np.array([0.1, 0.2, 0.5])
    )
    np.testing.assert_allclose(
        np.asarray(low), ss.sph_harm_y([1, 1, 0], [-1, 1, 0], [0.3, 1.0, 2.0], [0.1, 0.2, 0.5]), atol=2e-6
    )
    np.testing.assert_allclose(np.asarray(ms.sph_harm_y(0, 0, 0.3, 0.1)), 0.5 / np.sqrt(np.pi), rtol=1e-6)
    clipped = ms.sph_harm_y(np.array([4]), np.array([1]), np.array([0.7]), np.array([0.2]), n_max=2)
    np.testing.assert_allclose(np.asarray(clipped), ss.sph_harm_y([2], [1], [0.7], [0.2]), atol=2e-6)


def test_sph_harm_y_derivatives_jit_and_vmap():
    n, m, theta, phi = _harmonic_args(count=4, seed=7, n_top=5)
    with morphax.enable_x64():
        for part in (jnp.real, jnp.imag):
            check_grads(
                lambda t, p, part=part: part(ms.sph_harm_y(n, m, t, p)),
                (theta, phi),
                order=1,
                modes=("fwd", "rev"),
                rtol=1e-3,
            )
        # at the pole: d/dtheta Re Y_2^1 = -sqrt(15 / (8 pi)) cos(phi) cos(2 theta), finite
        pole = morphax.grad(lambda t: jnp.real(ms.sph_harm_y(2, 1, t, 0.1)))(0.0)
        np.testing.assert_allclose(float(pole), -np.sqrt(15 / (8 * np.pi)) * np.cos(0.1), rtol=1e-12)
    theta32, phi32 = theta.astype(np.float32), phi.astype(np.float32)
    eager = np.asarray(ms.sph_harm_y(n, m, theta32, phi32))
    fn = lambda t, p: ms.sph_harm_y(n, m, t, p, n_max=4)  # noqa: E731
    np.testing.assert_allclose(np.asarray(morphax.jit(fn)(theta32, phi32)), eager, rtol=2e-6, atol=1e-7)
    mapped = morphax.vmap(lambda t, p: ms.sph_harm_y(n, m, t, p, n_max=4), in_axes=(0, None))
    got = mapped(np.stack([theta32, theta32 / 2]), phi32)
    np.testing.assert_allclose(np.asarray(got[0]), eager, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(got[1]), ss.sph_harm_y(n, m, theta / 2, phi), atol=2e-6)
    with pytest.raises(NotImplementedError, match="diff_n"):
        ms.sph_harm_y(n, m, theta, phi, diff_n=1)
    with pytest.raises(ValueError, match="pass n_max"):
        morphax.jit(lambda n: ms.sph_harm_y(n, m, theta32, phi32))(n)


# ------------------------------------------------------------------------------ edge values


def test_edges_and_conventions():
    x = np.array([0.0, -1.0, inf, -inf, nan])
    # dawsn and erfcx: odd / decaying at +inf, erfcx overflows at -inf
    np.testing.assert_array_equal(
        np.asarray(ms.dawsn(x)), [0.0, ss.dawsn(-1.0).astype(np.float32), 0.0, 0.0, nan]
    )
    np.testing.assert_allclose(np.asarray(ms.erfcx(x)), [1.0, ss.erfcx(-1.0), 0.0, inf, nan], rtol=1e-6)
    # exp1/expi/expn: the integrals' limits (JAX returns nan at expi(0), expi(+-inf), exp1(inf))
    np.testing.assert_array_equal(np.asarray(ms.exp1(x)), [inf, nan, 0.0, nan, nan])
    np.testing.assert_array_equal(np.asarray(ms.expi(x)[[0, 2, 3, 4]]), [-inf, inf, 0.0, nan])
    np.testing.assert_array_equal(
        np.asarray(
            ms.expn(
                np.array([0.0, 1.0, 2.0, 3.0, -1.0, 2.5, 2.0]), np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, inf])
            )
        ),
        [inf, inf, 1.0, 0.5, nan, nan, 0.0],
    )
    assert np.isnan(float(ms.expn(2.0, -1.0))) and float(ms.expi(np.float32(100.0))) == inf
    # sici: Si odd with limits +-pi/2, Ci(0) = -inf, Ci(-inf) = nan
    si, ci = ms.sici(x)
    np.testing.assert_allclose(np.asarray(si), [0.0, -0.9460831, np.pi / 2, -np.pi / 2, nan], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ci)[[0, 2, 3, 4]], [-inf, 0.0, nan, nan])
    s, c = ms.fresnel(x)
    np.testing.assert_array_equal(np.asarray(s)[[0, 2, 3, 4]], [0.0, 0.5, -0.5, nan])
    np.testing.assert_array_equal(np.asarray(c)[[0, 2, 3, 4]], [0.0, 0.5, -0.5, nan])
    # spence: pi^2/6 at 0, 0 at 1, nan below 0 and at inf (as SciPy's real spence)
    np.testing.assert_allclose(
        np.asarray(ms.spence(np.array([0.0, 1.0, -1.0, inf, nan]))),
        [np.pi**2 / 6, 0.0, nan, nan, nan],
        rtol=1e-6,
    )
    # owens_t: exact at h = 0 and a = 1, 0 at a = 0 or h = inf, nan propagates
    h, a = np.array([0.0, 1.0, inf, nan, -1.0, 0.7]), np.array([1.0, 0.0, 2.0, 1.0, inf, 1.0])
    np.testing.assert_allclose(np.asarray(ms.owens_t(h, a)), ss.owens_t(h, a), rtol=1e-6)
    # far arguments: the asymptotic ranges of sici and fresnel
    with morphax.enable_x64():
        far = np.array([2e9, 5e4, -5e4])
        np.testing.assert_allclose(np.asarray(ms.sici(far)[1]), ss.sici(far)[1], rtol=1e-9)
        np.testing.assert_allclose(np.asarray(ms.fresnel(far)[0]), ss.fresnel(far)[0], rtol=1e-12)


def test_half_precision_goes_through_float32():
    x = np.array([0.5, -2.0, 7.0], np.float16)
    for fn, ref in [
        (ms.dawsn, ss.dawsn),
        (ms.erfcx, ss.erfcx),
        (_first(ms.fresnel), lambda v: ss.fresnel(v)[0]),
    ]:
        got = fn(x)
        assert got.dtype == np.float16
        np.testing.assert_allclose(np.asarray(got, np.float64), ref(x.astype(np.float64)), rtol=2e-3)


def test_errors_like_jax():
    for fn in (ms.dawsn, ms.expi, ms.exp1, ms.hyp1f1):
        with pytest.raises(ValueError, match="complex"):
            fn(*([1j] * (3 if fn is ms.hyp1f1 else 1)))
    with pytest.raises(ValueError, match="real-valued"):
        ms.sici(1j)
    with pytest.raises(NotImplementedError, match="complex"):
        ms.fresnel(1j)
    with pytest.raises(TypeError, match="not supported"):
        ms.spence(jnp.ones(2, jnp.bfloat16))
    with pytest.raises(TypeError):
        ms.bessel_jn(1.0, v=1.5)
