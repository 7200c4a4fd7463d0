"""`morphax.nn` activations against NumPy/SciPy formulas: values, dtypes (integers promote to
float, float16 stays float16), masks for softmax, and tracing through make_jaxpr."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import morphax
import morphax.nn as nn
import morphax.numpy as jnp
from morphax._src.core.jaxpr import check_jaxpr, eval_jaxpr
from morphax.test_util import check_grads

X = np.array([[-30.0, -2.0, -0.5, 0.0], [0.5, 1.0, 3.0, 40.0]], np.float32)


def _check(fn, want, x, dtype=np.float32, rtol=1e-5, atol=1e-6):
    got = fn(jnp.asarray(x))
    assert got.dtype == dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=rtol, atol=atol)
    closed = morphax.make_jaxpr(fn)(jnp.asarray(x))
    check_jaxpr(closed.jaxpr)
    (staged,) = eval_jaxpr(closed.jaxpr, closed.consts, jnp.asarray(x))
    # The eager call is one compiled program (as JAX's jitted activations); the staged jaxpr runs
    # primitive by primitive: transcendentals may round an ulp apart, which 1 + tanh amplifies.
    np.testing.assert_allclose(np.asarray(staged), np.asarray(got), rtol=2e-6, atol=1e-7)


x64 = X.astype(np.float64)
CASES = {
    "sigmoid": (nn.sigmoid, scipy.special.expit(x64)),
    "relu": (nn.relu, np.maximum(x64, 0)),
    "relu6": (nn.relu6, np.clip(x64, 0, 6)),
    "softplus": (nn.softplus, np.logaddexp(x64, 0)),
    "log_sigmoid": (nn.log_sigmoid, -np.logaddexp(-x64, 0)),
    "silu": (nn.silu, x64 * scipy.special.expit(x64)),
    "gelu_exact": (
        lambda x: nn.gelu(x, approximate=False),
        x64 * 0.5 * (1 + scipy.special.erf(x64 / np.sqrt(2))),
    ),
    "gelu": (nn.gelu, 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)))),
    "elu": (nn.elu, np.where(x64 > 0, x64, np.expm1(np.minimum(x64, 0)))),
    "leaky_relu": (nn.leaky_relu, np.where(x64 >= 0, x64, 0.01 * x64)),
    "softmax": (nn.softmax, scipy.special.softmax(x64, axis=-1)),
    "softmax0": (lambda x: nn.softmax(x, axis=0), scipy.special.softmax(x64, axis=0)),
    "log_softmax": (nn.log_softmax, scipy.special.log_softmax(x64, axis=-1)),
    "logsumexp": (lambda x: nn.logsumexp(x, axis=1), scipy.special.logsumexp(x64, axis=1)),
    "identity": (nn.identity, x64),
    "soft_sign": (nn.soft_sign, x64 / (np.abs(x64) + 1)),
    "mish": (nn.mish, x64 * np.tanh(np.logaddexp(x64, 0))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_activation(name):
    fn, want = CASES[name]
    _check(fn, want, X)


def test_dtypes():
    assert nn.sigmoid(jnp.arange(3)).dtype == np.float32
    assert nn.softmax(jnp.ones(3, jnp.float16)).dtype == np.float16
    assert nn.relu(jnp.arange(-2, 2)).dtype == np.int32
    assert nn.relu(2.0).weak_type


def test_softmax_where():
    mask = np.array([[True, False, True, True], [False, False, True, True]])
    got = nn.softmax(jnp.asarray(X), where=jnp.asarray(mask))
    want = np.where(mask, np.exp(np.where(mask, x64, -np.inf)), 0)
    want = want / want.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-7)
    got = nn.log_softmax(jnp.asarray(X), where=jnp.asarray(mask))
    assert np.all(np.isneginf(np.asarray(got)[~mask]))
    np.testing.assert_allclose(np.asarray(got)[mask], np.log(want[mask]), rtol=1e-5, atol=1e-6)


def test_one_hot():
    x = np.array([0, 2, 5, -1], np.int32)
    got = nn.one_hot(jnp.asarray(x), 4)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), (x[:, None] == np.arange(4)).astype(np.float32))
    got = nn.one_hot(jnp.asarray(x), 3, dtype=jnp.int8, axis=0)
    np.testing.assert_array_equal(np.asarray(got), (x[None, :] == np.arange(3)[:, None]).astype(np.int8))
    closed = morphax.make_jaxpr(lambda v: nn.one_hot(v, 5))(jnp.asarray(x))
    assert closed.out_avals[0].shape == (4, 5)


def test_relu_derivative_at_zero_is_zero():
    x = jnp.array([-1.0, 0.0, 2.0])
    _, tangent = morphax.jvp(nn.relu, (x,), (jnp.ones(3),))
    np.testing.assert_array_equal(np.asarray(tangent), [0.0, 0.0, 1.0])


def test_log1mexp_is_accurate_at_both_ends_with_derivative_one_over_expm1():
    x = np.array([1e-6, 1e-3, 0.5, np.log(2.0), 1.0, 5.0, 30.0, 80.0], np.float32)
    x64 = x.astype(np.float64)
    # float64 with the accurate form on each side (log of 1 - tiny loses the tiny part)
    want = np.where(x64 < np.log(2.0), np.log(-np.expm1(-x64)), np.log1p(-np.exp(-x64)))
    np.testing.assert_allclose(np.asarray(nn.log1mexp(x), np.float64), want, rtol=2e-6)
    g = morphax.grad(lambda v: jnp.sum(nn.log1mexp(v)))(x)
    np.testing.assert_allclose(np.asarray(g, np.float64), 1 / np.expm1(x64), rtol=2e-6)
    with morphax.enable_x64():
        check_grads(nn.log1mexp, (np.array([0.3, 2.0, 9.0]),), order=2)


def test_logmeanexp_over_axes_and_masks():
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32) * 5
    x64 = x.astype(np.float64)
    lme = lambda a, axis=None: np.log(np.mean(np.exp(a), axis=axis))  # noqa: E731
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(x)), lme(x64), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(x, axis=1)), lme(x64, 1), rtol=1e-5)
    got = nn.logmeanexp(x, axis=(0, 1), keepdims=True)
    assert got.shape == (1, 1)
    where = np.array([True, False, True, True])
    got = nn.logmeanexp(x, axis=1, where=where)
    np.testing.assert_allclose(np.asarray(got), lme(x64[:, where], 1), rtol=1e-5)
    jitted = morphax.jit(lambda a: nn.logmeanexp(a, axis=0))(x)
    np.testing.assert_allclose(np.asarray(jitted), lme(x64, 0), rtol=1e-5)
