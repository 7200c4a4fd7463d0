"""lax's special functions (bessel_i0e/i1e, igamma/igammac, igamma_grad_a, random_gamma_grad,
betainc, zeta): values against SciPy on grids in float32 and float64, the parameter derivatives
against float64 central differences of scipy.special.gammainc and against quadrature, XLA's
conventions at special values, jit and vmap, check_grads of the differentiable arguments, the
errors for the unsupported derivatives, dtypes and shapes; JAX as an extra oracle when present."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as integrate
import scipy.special as sp

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.test_util import check_grads

F32_ULP = 2.0**-23


def _np(x):
    return np.asarray(x)


def _grid(lo, hi, n, log=True):
    return np.geomspace(lo, hi, n) if log else np.linspace(lo, hi, n)


def _pairs(a_vals, x_vals):
    a, x = np.meshgrid(a_vals, x_vals, indexing="ij")
    return a.ravel(), x.ravel()


def _fd_da(a, x):
    """Richardson-extrapolated central difference of P(a, x) in a (of -Q where P is near 1), with a
    step on the scale the function varies on."""
    lp = np.abs(np.log(x) - sp.psi(a))
    h = 1e-3 * np.minimum(np.minimum(a, np.sqrt(a)), 0.1 / np.maximum(lp, 1e-3))

    def d(f, h):
        return (f(a + h, x) - f(a - h, x)) / (2 * h)

    p = (4 * d(sp.gammainc, h / 2) - d(sp.gammainc, h)) / 3
    q = -(4 * d(sp.gammaincc, h / 2) - d(sp.gammaincc, h)) / 3
    return np.where(x > a, q, p)


def _density(a, x):
    return np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))


# Parameter grids: moderate a and x over several decades, both sides of x = a.
A_GRID = _grid(0.05, 80.0, 15)
X_GRID = _grid(0.01, 120.0, 17)


# ----------------------------------------------------------------------------------------- values


@pytest.mark.parametrize("name,ref", [("bessel_i0e", sp.i0e), ("bessel_i1e", sp.i1e)])
def test_bessel_values(name, ref):
    x = np.concatenate([np.linspace(-30, 30, 241), [1e-30, -1e-30, 700.0, -700.0, 1e6]])
    f = getattr(lax, name)
    got32 = _np(f(x.astype(np.float32)))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, ref(x.astype(np.float32).astype(np.float64)), rtol=2 * F32_ULP, atol=0)
    with morphax.enable_x64():
        got64 = _np(f(x))
    assert got64.dtype == np.float64
    np.testing.assert_allclose(got64, ref(x), rtol=1e-15, atol=0)


def test_bessel_specials_and_symmetry():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(_np(lax.bessel_i0e(x)), [1.0, 1.0, 0.0, 0.0, np.nan])
    np.testing.assert_array_equal(_np(lax.bessel_i1e(x)), [0.0, -0.0, 0.0, -0.0, np.nan])
    y = np.linspace(0.1, 10, 20).astype(np.float32)
    np.testing.assert_array_equal(_np(lax.bessel_i0e(-y)), _np(lax.bessel_i0e(y)))
    np.testing.assert_array_equal(_np(lax.bessel_i1e(-y)), -_np(lax.bessel_i1e(y)))


@pytest.mark.parametrize("name,ref", [("igamma", sp.gammainc), ("igammac", sp.gammaincc)])
def test_igamma_values(name, ref):
    a, x = _pairs(A_GRID, X_GRID)
    f = getattr(lax, name)
    a32, x32 = a.astype(np.float32), x.astype(np.float32)
    want = ref(a32.astype(np.float64), x32.astype(np.float64))
    got32 = _np(f(a32, x32))
    assert got32.dtype == np.float32
    # Correct rounding of SciPy's float64 value, with room for SciPy's own error near underflow.
    np.testing.assert_allclose(got32, want, rtol=2 * F32_ULP, atol=1e-44)
    with morphax.enable_x64():
        got64 = _np(f(a, x))
    assert got64.dtype == np.float64
    np.testing.assert_array_equal(got64, ref(a, x))
    np.testing.assert_allclose(_np(lax.igamma(a32, x32)) + _np(lax.igammac(a32, x32)), 1.0, rtol=1e-6)


def test_igamma_special_values():
    a = np.array([1.0, 2.0, 1.0, -1.0, 0.0, np.nan, 1.0, 0.0, 0.0, np.inf, np.inf, np.inf, np.inf])
    x = np.array([0.0, np.inf, -1.0, 1.0, 0.0, 1.0, np.nan, 2.0, np.inf, 0.5, 2.0, np.inf, 0.0])
    with morphax.enable_x64():
        p, q = _np(lax.igamma(a, x)), _np(lax.igammac(a, x))
    np.testing.assert_array_equal(p, [0, 1, np.nan, np.nan, np.nan, np.nan, np.nan, 1, 1, 0, np.nan, 1, 0])
    np.testing.assert_array_equal(q, [1, 0, np.nan, np.nan, np.nan, np.nan, np.nan, 0, 0, 1, np.nan, 0, 1])


def test_betainc_values():
    a, b, x = (
        m.ravel()
        for m in np.meshgrid(_grid(0.1, 30, 8), _grid(0.1, 30, 8), np.linspace(0.01, 0.99, 11), indexing="ij")
    )
    a32, b32, x32 = (v.astype(np.float32) for v in (a, b, x))
    got32 = _np(lax.betainc(a32, b32, x32))
    assert got32.dtype == np.float32
    want = sp.betainc(*(v.astype(np.float64) for v in (a32, b32, x32)))
    np.testing.assert_allclose(got32, want, rtol=2 * F32_ULP, atol=1e-44)
    with morphax.enable_x64():
        got64 = _np(lax.betainc(a, b, x))
    np.testing.assert_array_equal(got64, sp.betainc(a, b, x))
    edge = _np(lax.betainc(np.float32(2), np.float32(3), np.array([0.0, 1.0, -0.5, 1.5, np.nan], np.float32)))
    np.testing.assert_array_equal(edge, [0.0, 1.0, np.nan, np.nan, np.nan])


def test_zeta_values():
    x, q = _pairs(np.linspace(1.1, 12.0, 14), _grid(0.05, 30.0, 13))
    x32, q32 = x.astype(np.float32), q.astype(np.float32)
    got32 = _np(lax.zeta(x32, q32))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(
        got32, sp.zeta(x32.astype(np.float64), q32.astype(np.float64)), rtol=2 * F32_ULP
    )
    with morphax.enable_x64():
        got64 = _np(lax.zeta(x, q))
    np.testing.assert_array_equal(got64, sp.zeta(x, q))
    # Riemann zeta and a shifted sum: zeta(x, q) = q^-x + zeta(x, q + 1).
    with morphax.enable_x64():
        np.testing.assert_allclose(_np(lax.zeta(2.0, 1.0)), np.pi**2 / 6, rtol=1e-15)
        np.testing.assert_allclose(_np(lax.zeta(3.5, 0.7)), 0.7**-3.5 + _np(lax.zeta(3.5, 1.7)), rtol=1e-14)


def test_zeta_special_values():
    # XLA's conventions: +inf at x == 1; at the poles q = 0, -1, ... +inf for even x, else nan;
    # nan for x < 1, for an infinite x and for q = +inf.
    x = np.array([1.0, 1.0, 2.0, 3.0, 4.0, 2.5, 0.5, np.inf, 2.0, 3.0, 2.0])
    q = np.array([1.0, np.nan, 0.0, -1.0, -2.0, -2.0, 1.0, 1.0, np.inf, -1.5, -0.5])
    with morphax.enable_x64():
        got = _np(lax.zeta(x, q))
    want = [np.inf, np.inf, np.inf, np.nan, np.inf, np.nan, np.nan, np.nan, np.nan, sp.zeta(3.0, -1.5)]
    want.append(sp.zeta(2.0, -0.5))
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ parameter derivatives of P(a, x)


def test_igamma_grad_a_against_finite_differences():
    a, x = _pairs(A_GRID, X_GRID)
    with morphax.enable_x64():
        got = _np(lax.igamma_grad_a(a, x))
    want = _fd_da(a, x)
    keep = np.abs(want) > 1e-250
    np.testing.assert_allclose(got[keep], want[keep], rtol=1e-7)
    assert np.all(got[keep] < 0)  # P(a, x) decreases in a


def test_random_gamma_grad_against_finite_differences():
    a, x = _pairs(A_GRID, X_GRID)
    with morphax.enable_x64():
        got = _np(lax.random_gamma_grad(a, x))
    want = -_fd_da(a, x) / _density(a, x)
    keep = np.isfinite(want) & (np.abs(_fd_da(a, x)) > 1e-250)
    np.testing.assert_allclose(got[keep], want[keep], rtol=1e-7)


@pytest.mark.parametrize("a,x", [(0.3, 0.2), (1.5, 2.0), (4.0, 1.0), (2.5, 9.0), (0.05, 3.0)])
def test_igamma_grad_a_against_quadrature(a, x):
    # dP/da = (1/Gamma(a)) int_0^x log(t) t^(a-1) e^-t dt - digamma(a) P(a, x); t = s^(1/a)
    # (t^(a-1) dt = ds / a, log t = log(s) / a) removes the endpoint singularity of t^(a-1).
    # Beyond x = a, where P is near 1, the same identity for Q = 1 - P cancels less.
    if x < a:
        inner = integrate.quad(lambda s: np.log(s) / a * np.exp(-(s ** (1 / a))), 0, x**a, limit=200)[0]
        want = inner / (a * sp.gamma(a)) - sp.psi(a) * sp.gammainc(a, x)
    else:
        inner = integrate.quad(lambda t: np.log(t) * t ** (a - 1) * np.exp(-t), x, np.inf, limit=200)[0]
        want = -(inner / sp.gamma(a) - sp.psi(a) * sp.gammaincc(a, x))
    with morphax.enable_x64():
        np.testing.assert_allclose(_np(lax.igamma_grad_a(a, x)), want, rtol=1e-9)
        np.testing.assert_allclose(_np(lax.random_gamma_grad(a, x)), -want / _density(a, x), rtol=1e-9)


def test_parameter_derivatives_float32_and_large_a():
    # float32 results are the float64 reference rounded once; large a (near x = a, where both
    # expansions need many terms) stays accurate and quick.
    a = np.array([0.5, 3.0, 40.0, 1e3, 1e5, 1e5, 2.0], np.float32)
    x = np.array([0.7, 2.0, 60.0, 1e3, 1e5 - 300, 1e5 + 300, 1e-30], np.float32)
    with morphax.enable_x64():
        want_g = _np(lax.igamma_grad_a(a.astype(np.float64), x.astype(np.float64)))
        want_r = _np(lax.random_gamma_grad(a.astype(np.float64), x.astype(np.float64)))
    np.testing.assert_allclose(_np(lax.igamma_grad_a(a, x)), want_g, rtol=F32_ULP, atol=1e-44)
    np.testing.assert_allclose(_np(lax.random_gamma_grad(a, x)), want_r, rtol=F32_ULP)
    fd = _fd_da(a[:-1].astype(np.float64), x[:-1].astype(np.float64))
    np.testing.assert_allclose(want_g[:-1], fd, rtol=1e-6)
    # random_gamma_grad is computed without x^a e^-x, so it does not underflow where that does.
    assert want_r[-1] > 0 and np.isfinite(want_r[-1])


def test_parameter_derivative_special_values():
    a = np.array([0.0, -1.0, 1.0, 1.0, np.nan, 1.0, 2.0, np.inf])
    x = np.array([1.0, 1.0, 0.0, -1.0, 1.0, np.inf, np.nan, 1.0])
    with morphax.enable_x64():
        g, r = _np(lax.igamma_grad_a(a, x)), _np(lax.random_gamma_grad(a, x))
    want = [np.nan, np.nan, 0.0, np.nan, np.nan, np.nan, np.nan, np.nan]
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(r, want)


# ------------------------------------------------------------------------- dtypes, shapes, errors

ALL = {
    "bessel_i0e": 1,
    "bessel_i1e": 1,
    "igamma": 2,
    "igammac": 2,
    "igamma_grad_a": 2,
    "random_gamma_grad": 2,
    "zeta": 2,
    "betainc": 3,
}
VALID = {1: (1.5,), 2: (1.5, 2.0), 3: (1.5, 2.0, 0.4)}


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_result_dtype_and_weak_type(name, dtype):
    dt = np.dtype(getattr(jnp, dtype))
    args = [np.asarray(v).astype(dt) for v in VALID[ALL[name]]]
    out = getattr(lax, name)(*args)
    assert out.dtype == dt and out.shape == ()
    assert not out.weak_type
    assert getattr(lax, name)(*VALID[ALL[name]]).weak_type  # Python scalars stay weak


@pytest.mark.parametrize("name", sorted(ALL))
def test_rejects_integer_and_complex(name):
    n = ALL[name]
    with pytest.raises(TypeError, match=r"does not accept dtype int32"):
        getattr(lax, name)(*[np.int32(1)] * n)
    with pytest.raises(TypeError, match=r"does not accept dtype complex64"):
        getattr(lax, name)(*[np.complex64(1)] * n)


@pytest.mark.parametrize("name", sorted(n for n in ALL if ALL[n] > 1))
def test_mixed_dtypes_and_shapes(name):
    f, n = getattr(lax, name), ALL[name]
    with pytest.raises(TypeError, match="same dtypes"):
        f(*[np.float32(1.5)] * (n - 1), np.float16(0.5))
    with pytest.raises(TypeError, match="same number of dimensions"):
        f(*[np.ones((2, 3), np.float32)] * (n - 1), np.full((3,), 0.5, np.float32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        f(*[np.ones((2, 3), np.float32)] * (n - 1), np.full((3, 2), 0.5, np.float32))
    # Rank-0 operands and size-1 axes broadcast.
    out = f(*[np.float32(1.5)] * (n - 1), np.full((2, 1, 3), 0.5, np.float32))
    assert out.shape == (2, 1, 3)
    out = f(*[np.ones((1, 4), np.float32) * 1.5] * (n - 1), np.full((3, 1), 0.5, np.float32))
    assert out.shape == (3, 4)


def test_betainc_broadcasts_each_operand():
    a = np.array([[1.0], [2.0]], np.float32)
    b = np.array([[1.0, 2.0, 3.0]], np.float32)
    x = np.float32(0.3)
    got = _np(lax.betainc(a, b, x))
    np.testing.assert_allclose(got, sp.betainc(a.astype(np.float64), b, 0.3), rtol=2 * F32_ULP)


# ---------------------------------------------------------------------------------- jit and vmap


def _inputs(name, shape, rng):
    n = ALL[name]
    if name.startswith("bessel"):
        return (rng.uniform(-5, 5, shape).astype(np.float32),)
    if name == "betainc":
        return tuple(
            rng.uniform(*dom, shape).astype(np.float32) for dom in ((0.5, 4), (0.5, 4), (0.05, 0.95))
        )
    if name == "zeta":
        return (rng.uniform(1.5, 5, shape).astype(np.float32), rng.uniform(0.2, 5, shape).astype(np.float32))
    return tuple(rng.uniform(0.2, 6, shape).astype(np.float32) for _ in range(n))


@pytest.mark.parametrize("name", sorted(ALL))
def test_jit_matches_eager(name):
    args = _inputs(name, (2, 5), np.random.default_rng(1))
    f = getattr(lax, name)
    np.testing.assert_array_equal(_np(morphax.jit(f)(*args)), _np(f(*args)))


@pytest.mark.parametrize("name", sorted(ALL))
def test_vmap_matches_loop(name):
    rng = np.random.default_rng(2)
    args = _inputs(name, (4, 3), rng)
    f = getattr(lax, name)
    want = np.stack([_np(f(*[a[i] for a in args])) for i in range(4)])
    np.testing.assert_array_equal(_np(morphax.vmap(f)(*args)), want)
    # Only the last operand batched (along its last axis); the others shared.
    last = args[-1].T
    got = morphax.vmap(lambda v: f(*[a[0] for a in args[:-1]], v), in_axes=1)(last)
    want = np.stack([_np(f(*[a[0] for a in args[:-1]], last[:, j])) for j in range(4)])
    np.testing.assert_array_equal(_np(got), want)


# ------------------------------------------------------------------------------------ derivatives


@pytest.fixture
def x64():
    with morphax.enable_x64():
        yield


def _tol_check(f, args, order):
    check_grads(f, args, order=order, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
def test_bessel_check_grads(name):
    x = jnp.asarray(np.array([-4.0, -1.3, -0.2, 0.3, 2.0, 7.5]))
    _tol_check(getattr(lax, name), (x,), 2)


@pytest.mark.usefixtures("x64")
def test_bessel_derivative_formulas_and_zero():
    x = np.array([-3.0, -0.5, 0.25, 4.0])
    g0 = _np(morphax.vmap(morphax.grad(lax.bessel_i0e))(x))
    g1 = _np(morphax.vmap(morphax.grad(lax.bessel_i1e))(x))
    np.testing.assert_allclose(g0, sp.i1e(x) - np.sign(x) * sp.i0e(x), rtol=1e-13)
    np.testing.assert_allclose(g1, sp.i0e(x) - sp.i1e(x) * (np.sign(x) + 1 / x), rtol=1e-13)
    # The limit of i1e' at 0 is 1/2 (the formula would divide by zero); i0e' is 0 there (JAX).
    assert float(morphax.grad(lax.bessel_i1e)(0.0)) == 0.5
    assert float(morphax.grad(lax.bessel_i0e)(0.0)) == 0.0
    assert abs(float(morphax.grad(lax.bessel_i1e)(1e-6)) - 0.5) < 1e-5


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_check_grads(name):
    f = getattr(lax, name)
    a = jnp.asarray(np.array([0.4, 1.5, 3.0, 7.0]))
    x = jnp.asarray(np.array([0.3, 2.5, 2.0, 9.0]))
    _tol_check(f, (a, x), 1)  # second derivatives in a raise (as in JAX)
    _tol_check(lambda x: f(a, x), (x,), 2)
    # The partials themselves, against SciPy.
    ga, gx = morphax.vmap(morphax.grad(f, argnums=(0, 1)))(a, x)
    sgn = 1.0 if name == "igamma" else -1.0
    np.testing.assert_allclose(_np(ga), sgn * _fd_da(_np(a), _np(x)), rtol=1e-7)
    np.testing.assert_allclose(_np(gx), sgn * _density(_np(a), _np(x)), rtol=1e-12)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["igamma_grad_a", "random_gamma_grad"])
def test_parameter_derivatives_check_grads_in_x(name):
    f = getattr(lax, name)
    a = jnp.asarray(np.array([0.4, 1.5, 3.0, 7.0, 20.0]))
    x = jnp.asarray(np.array([0.3, 2.5, 2.0, 9.0, 18.0]))
    _tol_check(lambda x: f(a, x), (x,), 2)


@pytest.mark.usefixtures("x64")
def test_mixed_second_derivative_of_igamma():
    # d/dx dP/da through igamma_grad_a's x-rule, against differences of the density in a.
    a, x, h = 2.5, 1.7, 1e-5
    got = float(morphax.grad(morphax.grad(lax.igamma, 0), 1)(a, x))
    want = (_density(a + h, x) - _density(a - h, x)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-8)


@pytest.mark.usefixtures("x64")
def test_betainc_check_grads_in_x():
    a = jnp.asarray(np.array([0.7, 2.0, 5.0]))
    b = jnp.asarray(np.array([1.5, 0.8, 3.0]))
    x = jnp.asarray(np.array([0.2, 0.6, 0.45]))
    _tol_check(lambda x: lax.betainc(a, b, x), (x,), 2)
    gx = _np(morphax.vmap(morphax.grad(lax.betainc, 2))(a, b, x))
    a_, b_, x_ = _np(a), _np(b), _np(x)
    np.testing.assert_allclose(gx, x_ ** (a_ - 1) * (1 - x_) ** (b_ - 1) / sp.beta(a_, b_), rtol=1e-12)


@pytest.mark.usefixtures("x64")
def test_zeta_check_grads_in_q():
    x = jnp.asarray(np.array([1.5, 2.0, 3.7]))
    q = jnp.asarray(np.array([0.5, 2.0, 4.0]))
    _tol_check(lambda q: lax.zeta(x, q), (q,), 2)
    gq = _np(morphax.vmap(morphax.grad(lax.zeta, 1))(x, q))
    np.testing.assert_allclose(gq, -_np(x) * sp.zeta(_np(x) + 1, _np(q)), rtol=1e-13)


@pytest.mark.usefixtures("x64")
def test_derivatives_under_jit_and_vmap():
    a = np.array([0.5, 2.0, 4.0])
    x = np.array([0.4, 0.5, 0.9])
    g = morphax.jit(morphax.vmap(morphax.grad(lambda x, a: lax.betainc(a, 2.0, x))))(x, a)
    want = _np(morphax.vmap(morphax.grad(lax.betainc, 2))(a, np.full(3, 2.0), x))
    np.testing.assert_allclose(_np(g), want, rtol=1e-14)
    g = morphax.vmap(morphax.jit(morphax.grad(lambda q: lax.zeta(3.0, q))))(a)
    np.testing.assert_allclose(_np(g), -3.0 * sp.zeta(4.0, a), rtol=1e-13)
    g = morphax.jit(morphax.grad(lambda a: jnp.sum(lax.igamma(a, x))))(a)
    np.testing.assert_allclose(_np(g), _fd_da(a, x), rtol=1e-7)


@pytest.mark.usefixtures("x64")
def test_unsupported_derivatives_raise():
    with pytest.raises(ValueError, match="betainc: differentiation with respect to a and b"):
        morphax.grad(lax.betainc, 0)(1.0, 2.0, 0.5)
    with pytest.raises(ValueError, match="betainc: differentiation with respect to a and b"):
        morphax.jvp(lambda b: lax.betainc(1.0, b, 0.5), (2.0,), (1.0,))
    with pytest.raises(NotImplementedError, match="'zeta' with respect to x"):
        morphax.grad(lax.zeta, 0)(3.0, 2.0)
    with pytest.raises(NotImplementedError, match="'igamma_grad_a' with respect to a"):
        morphax.grad(morphax.grad(lax.igamma, 0), 0)(1.5, 2.0)
    with pytest.raises(NotImplementedError, match="'igamma_grad_a' with respect to a"):
        morphax.grad(morphax.grad(lax.igammac, 0), 0)(1.5, 2.0)
    with pytest.raises(NotImplementedError, match="'random_gamma_grad' with respect to a"):
        morphax.grad(lax.random_gamma_grad, 0)(1.5, 2.0)
    # stop_gradient on the unsupported operand leaves the rest differentiable.
    g = morphax.grad(lambda a, x: lax.zeta(lax.stop_gradient(a), x), argnums=(0, 1))(3.0, 2.0)
    assert float(g[0]) == 0.0 and np.isclose(float(g[1]), -3.0 * sp.zeta(4.0, 2.0))


# --------------------------------------------------------------------------------- JAX as oracle


def test_against_jax():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(3)
    n = 400
    a = np.exp(rng.uniform(np.log(0.05), np.log(50.0), n))
    x = a * np.exp(rng.uniform(-2.0, 2.0, n))
    # Special values where XLA's conventions are copied, appended so each JAX function compiles once.
    sa = np.array([1.0, 2.0, 1.0, -1.0, 0.0, np.inf, np.inf, np.inf, np.inf])
    sx = np.array([0.0, np.inf, -1.0, 1.0, 0.0, 0.5, 2.0, np.inf, 0.0])
    a, x = np.concatenate([a, sa]), np.concatenate([x, sx])
    xb = rng.uniform(-8, 8, 50)
    bx = rng.uniform(0.02, 0.98, 50)
    with jax.enable_x64(True), morphax.enable_x64():
        J = jax.lax
        for name in ("igamma", "igammac", "igamma_grad_a", "random_gamma_grad"):
            got, want = _np(getattr(lax, name)(a, x)), np.asarray(getattr(J, name)(a, x))
            np.testing.assert_allclose(got[:n], want[:n], rtol=1e-10, atol=1e-300)
            np.testing.assert_array_equal(got[n:], want[n:])
        for name in ("bessel_i0e", "bessel_i1e"):
            np.testing.assert_allclose(
                _np(getattr(lax, name)(xb)), np.asarray(getattr(J, name)(xb)), rtol=1e-13
            )
            np.testing.assert_allclose(
                _np(morphax.vmap(morphax.grad(getattr(lax, name)))(xb)),
                np.asarray(jax.vmap(jax.grad(getattr(J, name)))(xb)),
                rtol=1e-12,
            )
        ab, bb = a[:50] / 5 + 0.1, x[:50] / 5 + 0.1
        np.testing.assert_allclose(
            _np(lax.betainc(ab, bb, bx)), np.asarray(J.betainc(ab, bb, bx)), rtol=1e-10
        )
        np.testing.assert_allclose(
            _np(morphax.vmap(morphax.grad(lax.betainc, 2))(ab, bb, bx)),
            np.asarray(jax.vmap(jax.grad(J.betainc, 2))(ab, bb, bx)),
            rtol=1e-10,
        )
        zx = np.concatenate([1.2 + a[:50] / 5, [1.0, 2.0, 3.0, 4.0, 2.5, 0.5, np.inf, 2.0, 3.0]])
        zq = np.concatenate([x[:50] + 0.05, [np.nan, 0.0, -1.0, -2.0, -2.0, 1.0, 1.0, np.inf, -1.5]])
        got, want = _np(lax.zeta(zx, zq)), np.asarray(J.zeta(zx, zq))
        np.testing.assert_allclose(got[:50], want[:50], rtol=1e-12)
        np.testing.assert_array_equal(got[50:], want[50:])
        ga = _np(morphax.vmap(morphax.grad(lax.igamma, argnums=(0, 1)))(a[:n], x[:n])[0])
        np.testing.assert_allclose(ga, np.asarray(jax.vmap(jax.grad(J.igamma, 0))(a[:n], x[:n])), rtol=1e-10)


def test_names_in_lax():
    for name in ALL:
        assert callable(getattr(morphax.lax, name))
    assert lax.regularized_incomplete_beta_p.name == "regularized_incomplete_beta"
