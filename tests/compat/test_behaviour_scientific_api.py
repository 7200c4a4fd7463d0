"""Small API behaviours the scientific JAX libraries (diffrax, lineax, optimistix, equinox) rely
on (issue 33, item 4): `axis` given as any sequence, and complex `logaddexp`/`softplus`. Expected
values are NumPy's (complex128) and what JAX 0.10.2 gives."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp


@pytest.mark.parametrize(
    "axis", [range(2), range(1, 3), [0, 2], (2,), np.array([0, 1]), np.array(1), np.int64(2)], ids=str
)
@pytest.mark.parametrize("name", ["sum", "max", "mean", "var", "prod", "any"])
def test_reductions_take_axis_as_any_sequence(name, axis):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1
    want = getattr(np, name)(x, axis=tuple(np.asarray(axis).reshape(-1).tolist()))
    got = getattr(jnp, name)(x, axis=axis)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    jitted = morphax.jit(lambda v: getattr(jnp, name)(v, axis=axis))(x)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-6, atol=1e-6)


def test_axis_sequences_keep_numpys_errors():
    x = jnp.ones((2, 3))
    with pytest.raises(ValueError, match="duplicate"):
        jnp.sum(x, axis=[1, 1])
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.sum(x, axis=range(3))


def _complex_cases():
    rng = np.random.default_rng(0)
    a = (rng.normal(size=8) * 3 + 1j * rng.normal(size=8) * 3).astype(np.complex64)
    b = (rng.normal(size=8) * 3 + 1j * rng.normal(size=8) * 3).astype(np.complex64)
    return a, b


def _wrapped(z):
    """log(exp(a) + exp(b)) in complex128 with its imaginary part in [-pi, pi] (a branch of it)."""
    return z.real + 1j * np.angle(np.exp(1j * z.imag))


def test_complex_logaddexp_is_jaxs():
    a, b = _complex_cases()
    want = _wrapped(np.log(np.exp(a.astype(np.complex128)) + np.exp(b.astype(np.complex128))))
    for got in (jnp.logaddexp(a, b), morphax.jit(jnp.logaddexp)(a, b)):
        got = np.asarray(got)
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    # JAX 0.10.2's value at one point.
    one = np.asarray(jnp.logaddexp(np.complex64(1 + 2j), np.complex64(0.5 - 1j)))
    np.testing.assert_allclose(one, 0.10499287 + 1.7889593j, rtol=1e-5)


def test_complex_softplus_is_jaxs():
    a, _ = _complex_cases()
    want = _wrapped(np.log1p(np.exp(a.astype(np.complex128))))
    np.testing.assert_allclose(np.asarray(morphax.nn.softplus(a)), want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(
        np.asarray(morphax.nn.softplus(np.complex64(1 + 2j))), 0.9063238 + 1.6238286j, rtol=1e-5
    )


# JAX 0.10.2's answers: with wrap_negative_indices=False a negative index is out of bounds, and
# the mode decides (a static one in a basic get clamps; 'fill' fills; scatters drop it).
_V = np.arange(5.0, dtype=np.float32)
_X = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
_WRAP_CASES = [
    (lambda x, v: x.at[-1].get(wrap_negative_indices=False), _X[0]),
    (lambda x, v: x.at[-1].get(), _X[1]),
    (lambda x, v: x.at[0, -1].get(wrap_negative_indices=False, mode="fill", fill_value=-7), np.full(4, -7.0)),
    (lambda x, v: v.at[-1].set(99, wrap_negative_indices=False, mode="drop"), _V),
    (lambda x, v: v.at[-1].set(99), np.array([0, 1, 2, 3, 99.0])),
    (
        lambda x, v: v.at[jnp.array([-1, 2])].add(10, wrap_negative_indices=False),
        np.array([0, 1, 12, 3, 4.0]),
    ),
    (
        lambda x, v: v.at[jnp.array([-1, 2])].get(wrap_negative_indices=False, mode="fill"),
        np.array([np.nan, 2.0]),
    ),
    (lambda x, v: v.at[-2].apply(lambda t: t * 100, wrap_negative_indices=False), _V),
    (lambda x, v: v.at[-2].multiply(3, wrap_negative_indices=False), _V),
    (lambda x, v: v.at[-2].divide(2, wrap_negative_indices=False), _V),
    (lambda x, v: v.at[-2].max(50, wrap_negative_indices=True), np.array([0, 1, 2, 50, 4.0])),
]


@pytest.mark.parametrize("case", range(len(_WRAP_CASES)))
def test_wrap_negative_indices_as_jax(case):
    f, want = _WRAP_CASES[case]
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(_X), jnp.asarray(_V))), want)
    np.testing.assert_array_equal(np.asarray(morphax.jit(f)(_X, _V)), want)


@pytest.mark.parametrize(
    "shape,dtype",
    [((4, 3), np.float32), ((3, 5), np.complex64), ((2, 4, 4), np.float32), ((0, 2), np.float32)],
)
def test_qr_raw_is_numpys_householder_form(shape, dtype):
    """jnp.linalg.qr(mode="raw") as JAX and NumPy return it: h (..., N, M), LAPACK's geqrf packed
    matrix transposed, and tau; its reflectors rebuild Q with A = Q R."""
    from morphax._src.prims.linalg.householder import householder_product

    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    tol = 1e-5
    h, tau = jnp.linalg.qr(a, mode="raw")
    want_h, want_tau = np.linalg.qr(a, mode="raw")
    assert h.shape == want_h.shape and h.dtype == a.dtype and tau.shape == want_tau.shape
    np.testing.assert_allclose(np.asarray(h), want_h, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(tau), want_tau, rtol=tol, atol=tol)
    jitted = morphax.jit(lambda x: jnp.linalg.qr(x, mode="raw"))(a)
    np.testing.assert_allclose(np.asarray(jitted[0]), want_h, rtol=tol, atol=tol)
    if a.size and shape[-2] >= shape[-1]:
        packed = np.swapaxes(np.asarray(h), -1, -2)
        q = np.asarray(householder_product(packed, tau))
        r = np.triu(packed)[..., : shape[-1], :]
        np.testing.assert_allclose(q @ r, a, rtol=10 * tol, atol=10 * tol)
