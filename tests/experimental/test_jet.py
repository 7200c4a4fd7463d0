"""experimental.jet.jet: Taylor-mode derivatives against JAX 0.10.2's jet (recorded in
tests/data/jet.json by tests/data/record_jet.py), against SciPy's closed forms for the rules JAX
lacks (lgamma, digamma: polygamma; atan, tan), and against nested first-order JVPs; composed with
jit, grad and vmap; the argument checks and the error for a primitive without a rule."""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest
import scipy.special as ss

import morphax
import morphax.numpy as jnp
from morphax import lax, nn
from morphax.experimental.jet import jet
from morphax.scipy import special

RECORDED = json.loads((pathlib.Path(__file__).parents[1] / "data" / "jet.json").read_text())
X = np.array(RECORDED["x"])
TERMS = [np.array(t) for t in RECORDED["terms"]]
ENV = {"jnp": jnp, "lax": lax, "nn": nn, "special": special, "jax": morphax}


@pytest.fixture
def x64():
    with morphax.enable_x64():
        yield


@pytest.mark.parametrize("src", sorted(RECORDED["cases"]))
def test_matches_jax(src, x64):
    fun = eval(f"lambda v: {src}", ENV)  # noqa: S307 - the recorded expressions
    primal, series = jet(fun, (jnp.asarray(X),), ([jnp.asarray(t) for t in TERMS],))
    want = RECORDED["cases"][src]
    assert len(series) == len(TERMS)
    for got, expected in zip([primal, *series], want):
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-11, atol=1e-11)


def _derivatives_along_t(f, x, order):
    """d^k/dt^k f(x + t) at t = 0 for k = 1..order: jet with the series (1, 0, 0, ...)."""
    one, zero = jnp.ones_like(x), jnp.zeros_like(x)
    return jet(f, (x,), ([one] + [zero] * (order - 1),))[1]


def test_special_functions_against_scipy(x64):
    x = jnp.array([0.6, 1.3, 2.7, 5.0])
    order = 4
    for k, got in enumerate(_derivatives_along_t(lax.lgamma, x, order), start=1):
        np.testing.assert_allclose(got, ss.polygamma(k - 1, np.asarray(x)), rtol=1e-10)
    for k, got in enumerate(_derivatives_along_t(lax.digamma, x, order), start=1):
        np.testing.assert_allclose(got, ss.polygamma(k, np.asarray(x)), rtol=1e-10)
    y = np.array([-0.8, 0.1, 0.4, 1.2])
    t = np.tan(y)
    sec2 = 1 + t * t
    d_tan = _derivatives_along_t(jnp.tan, jnp.asarray(y), 3)
    np.testing.assert_allclose(d_tan[0], sec2, rtol=1e-12)
    np.testing.assert_allclose(d_tan[1], 2 * t * sec2, rtol=1e-12)
    np.testing.assert_allclose(d_tan[2], 2 * sec2 * (1 + 3 * t * t), rtol=1e-12)
    d_atan = _derivatives_along_t(jnp.arctan, jnp.asarray(y), 3)
    q = 1 + y * y
    np.testing.assert_allclose(d_atan[0], 1 / q, rtol=1e-12)
    np.testing.assert_allclose(d_atan[1], -2 * y / q**2, rtol=1e-12)
    np.testing.assert_allclose(d_atan[2], (6 * y * y - 2) / q**3, rtol=1e-12)


def _nested_jvp(f, x, v, order):
    """d^k/dt^k f(x + t v) at t = 0 by k nested jvps (an independent route to the same numbers)."""
    outs = []
    g = f
    for _ in range(order):
        g = (lambda h: lambda y: morphax.jvp(h, (y,), (v,))[1])(g)
        outs.append(g(x))
    return outs


@pytest.mark.parametrize(
    "fun",
    [
        lambda v: jnp.sort(jnp.sin(3 * v)),
        lambda v: jnp.arcsin(v / 2) * jnp.arccos(v / 3),
        lambda v: jnp.cbrt(v + 2) + jnp.exp2(v),
        lambda v: lax.cond(v[0] > 0, jnp.sin, jnp.cos, v) * jnp.clip(v, 0.5, 1.0),
        lambda v: nn.softplus(v) + jnp.arctanh(v / 2) + jnp.arccosh(v + 1.5),
        lambda v: morphax.checkpoint(lambda w: jnp.fmod(w * 3, 1.1) * w)(v),
    ],
    ids=["sort", "asin_acos", "cbrt_exp2", "cond_clip", "softplus_atanh_acosh", "checkpoint_rem"],
)
def test_rules_against_nested_jvp(fun, x64):
    x, v = jnp.asarray(X), jnp.asarray(TERMS[0])
    order = 3
    _, series = jet(fun, (x,), ([v] + [jnp.zeros_like(v)] * (order - 1),))
    for got, want in zip(series, _nested_jvp(fun, x, v, order)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_custom_rules_are_bypassed_and_pytrees_out(x64):
    # As JAX's jet, custom_jvp functions are expanded through their primal bodies.
    @morphax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), 100.0 * t[0]))  # a deliberately wrong rule
    primal, series = jet(lambda v: {"a": f(v), "b": (v * 2, jnp.sum(v))}, (jnp.asarray(X),), ([jnp.ones(3)],))
    np.testing.assert_allclose(series["a"][0], np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(series["b"][0][0], 2 * np.ones(3))
    np.testing.assert_allclose(series["b"][1][0], 3.0)
    assert set(primal) == {"a", "b"}


def test_docstring_example_float32():
    h0, h1, h2 = 0.5**3.0, 3.0 * 0.5**2.0, 6.0 * 0.5
    f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
    np.testing.assert_allclose([f0, f1, f2], [0.12467473, 0.74414825, 2.9064636], rtol=1e-6)


def test_unscaled_coefficients(x64):
    x, terms = jnp.asarray(X), [jnp.asarray(t) for t in TERMS]
    _, scaled = jet(jnp.exp, (x,), (terms,))
    coeffs = [t / math.factorial(k + 1) for k, t in enumerate(terms)]
    _, raw = jet(jnp.exp, (x,), (coeffs,), factorial_scaled=False)
    for k in range(len(terms)):
        np.testing.assert_allclose(raw[k] * math.factorial(k + 1), scaled[k], rtol=1e-12)


def test_composes_with_jit_grad_vmap(x64):
    terms = [jnp.asarray(t) for t in TERMS[:2]]

    def second(x):
        return jet(lambda v: jnp.sin(v) * jnp.exp(v), (x,), (terms,))[1][1]

    x = jnp.asarray(X)
    np.testing.assert_allclose(morphax.jit(second)(x), second(x), rtol=1e-12)
    batched = morphax.vmap(second)(jnp.stack([x, x + 0.1]))
    np.testing.assert_allclose(batched[1], second(x + 0.1), rtol=1e-12)
    grad = morphax.grad(lambda x: jnp.sum(second(x)))(x)
    eps = 1e-6
    fd = [
        (jnp.sum(second(x.at[i].add(eps))) - jnp.sum(second(x.at[i].add(-eps)))) / (2 * eps) for i in range(3)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="inconsistent lengths"):
        jet(lambda a, b: a * b, (1.0, 2.0), ([1.0], [1.0, 2.0]))
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        jet(lambda d: d["a"], ({"a": 1.0},), ([{"a": 1.0}],))
    with pytest.raises(ValueError, match="has shape"):
        jet(jnp.sin, (jnp.ones(3),), ([jnp.ones(2)],))
    with pytest.raises(NotImplementedError, match="no Taylor rule for primitive 'while'"):
        jet(lambda v: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2, v), (1.0,), ([1.0],))
