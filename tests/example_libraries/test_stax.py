"""`example_libraries.stax`: JAX's initial parameters for the same key, bit for bit (recorded in
tests/data/stax.json), output shapes that agree with what apply computes, and each layer against
NumPy (dense, convolution, pooling, batch norm, dropout, the fan-in/out combinators)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import random
from morphax.example_libraries import stax

_DATA = json.loads((pathlib.Path(__file__).parents[1] / "data" / "stax.json").read_text())


@pytest.mark.parametrize("net", _DATA["networks"], ids=[n["source"][:60] for n in _DATA["networks"]])
def test_initial_parameters_are_jaxs(net):
    init, apply = eval(net["source"])  # noqa: S307
    out_shape, params = init(random.PRNGKey(7), tuple(net["input_shape"]))
    assert list(out_shape) == net["output_shape"]
    leaves = morphax.tree.leaves(params)
    assert len(leaves) == len(net["leaves"])
    for got, want in zip(leaves, net["leaves"]):
        got = np.asarray(got)
        assert got.dtype.name == want["dtype"] and list(got.shape) == want["shape"]
        assert got.tobytes().hex() == want["bits"]
    # apply agrees with the shape init promised (a batch of 2 for the -1)
    x = np.random.default_rng(0).normal(size=(2,) + tuple(net["input_shape"][1:])).astype(np.float32)
    out = apply(params, x)
    assert out.shape[1:] == tuple(out_shape[1:])


def test_layers_against_numpy():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 6, 6, 2)).astype(np.float32)
    _, (W, b) = stax.Dense(4)[0](random.PRNGKey(0), (-1, 5))  # noqa: N806
    v = rng.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(stax.Dense(4)[1]((W, b), v)), v @ np.asarray(W) + np.asarray(b), rtol=1e-5
    )
    pooled = stax.MaxPool((2, 2), strides=(2, 2))[1]((), x)
    np.testing.assert_array_equal(np.asarray(pooled), x.reshape(3, 3, 2, 3, 2, 2).max(axis=(2, 4)))
    averaged = stax.AvgPool((2, 2), strides=(2, 2), padding="SAME")[1]((), x)
    np.testing.assert_allclose(np.asarray(averaged), x.reshape(3, 3, 2, 3, 2, 2).mean(axis=(2, 4)), rtol=1e-6)
    summed = stax.SumPool((3, 3))[1]((), x)
    assert summed.shape == (3, 4, 4, 2)
    np.testing.assert_allclose(np.asarray(summed)[0, 0, 0], x[0, :3, :3].sum(axis=(0, 1)), rtol=1e-5)
    shape, bn = stax.BatchNorm()[0](random.PRNGKey(0), x.shape)
    z = np.asarray(stax.BatchNorm()[1](bn, x))
    np.testing.assert_allclose(z.mean(axis=(0, 1, 2)), 0, atol=1e-5)
    np.testing.assert_allclose(z.var(axis=(0, 1, 2)), 1, rtol=1e-3)
    np.testing.assert_allclose(np.asarray(stax.Flatten[1]((), x)), x.reshape(3, -1))


def test_dropout_and_combinators():
    x = jnp.ones((1000,))
    init, apply = stax.Dropout(0.8)
    kept = np.asarray(apply((), x, rng=random.PRNGKey(3)))
    assert set(np.unique(kept)) <= {0.0, 1.25} and 0.75 < np.mean(kept > 0) < 0.85
    np.testing.assert_array_equal(
        np.asarray(stax.Dropout(0.8, mode="test")[1]((), x, rng=random.key(0))), 1.0
    )
    with pytest.raises(ValueError, match="PRNG key"):
        apply((), x)
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Identity, stax.Exp), stax.FanInSum)
    _, params = init(random.PRNGKey(0), (-1, 3))
    v = jnp.arange(3.0)
    np.testing.assert_allclose(
        np.asarray(apply(params, v)), np.arange(3.0) + np.exp(np.arange(3.0)), rtol=1e-6
    )
    init, apply = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2))
    out_shape, params = init(random.PRNGKey(0), (-1, 3))
    assert out_shape == (-1, 6) and apply(params, jnp.ones((2, 3))).shape == (2, 6)


def test_gradients_flow_through_a_network():
    init, apply = stax.serial(stax.Conv(3, (2, 2)), stax.Relu, stax.Flatten, stax.Dense(1))
    _, params = init(random.PRNGKey(0), (-1, 4, 4, 1))
    x = jnp.asarray(np.random.default_rng(2).normal(size=(5, 4, 4, 1)).astype(np.float32))
    grads = morphax.jit(morphax.grad(lambda p: jnp.sum(apply(p, x) ** 2)))(params)
    assert all(np.all(np.isfinite(np.asarray(g))) for g in morphax.tree.leaves(grads))
