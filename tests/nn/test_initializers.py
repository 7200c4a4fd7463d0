"""`nn.initializers`: JAX's numbers for the same key (known answers recorded from JAX 0.10.2 in
tests/data/initializers.json: bit for bit, or within an ulp where a QR or complex log is
involved), the variance each builder promises, shapes and dtypes, and the errors JAX raises."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import random
from morphax.nn import initializers as I  # noqa: N812

_DATA = json.loads((pathlib.Path(__file__).parents[1] / "data" / "initializers.json").read_text())


def _evaluate(source):
    return np.asarray(eval(source, {"I": I, "random": random, "jnp": jnp, "key": random.PRNGKey(42)}))  # noqa: S307


def _want(case):
    return np.frombuffer(bytes.fromhex(case["bits"]), dtype=np.dtype(jnp.dtype(case["dtype"]))).reshape(
        case["shape"]
    )


@pytest.mark.parametrize("case", _DATA["exact"], ids=[c["source"] for c in _DATA["exact"]])
def test_same_bits_as_jax(case):
    got, want = _evaluate(case["source"]), _want(case)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("case", _DATA["near"], ids=[c["source"] for c in _DATA["near"]])
def test_within_an_ulp_of_jax(case):
    got, want = _evaluate(case["source"]), _want(case)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-7)


@pytest.mark.parametrize(
    "builder, scale, mode, truncated",
    [
        (I.glorot_uniform, 1.0, "fan_avg", False),
        (I.glorot_normal, 1.0, "fan_avg", True),
        (I.lecun_uniform, 1.0, "fan_in", False),
        (I.lecun_normal, 1.0, "fan_in", True),
        (I.he_uniform, 2.0, "fan_in", False),
        (I.he_normal, 2.0, "fan_in", True),
    ],
)
def test_named_builders_have_their_variance(builder, scale, mode, truncated):
    shape = (3, 3, 64, 96)  # a conv kernel: receptive field 9
    fan_in, fan_out = 9 * 64, 9 * 96
    n = fan_in if mode == "fan_in" else (fan_in + fan_out) / 2
    w = np.asarray(builder()(random.PRNGKey(0), shape), np.float64)
    assert w.shape == shape and w.dtype == np.float64 or w.dtype == np.float32
    np.testing.assert_allclose(w.var(), scale / n, rtol=0.05)
    bound = 2 * np.sqrt(scale / n) / 0.87962566103423978 if truncated else np.sqrt(3 * scale / n)
    assert np.abs(w).max() <= bound * (1 + 1e-6)


def test_variance_scaling_modes_axes_and_complex():
    key = random.PRNGKey(1)
    shape = (4, 5, 600)  # batch axis 0, in 1, out 2
    for mode, n in (("fan_in", 5), ("fan_out", 600), ("fan_avg", 302.5), ("fan_geo_avg", np.sqrt(3000))):
        w = I.variance_scaling(2.0, mode, "normal", in_axis=1, out_axis=2, batch_axis=0)(key, shape)
        np.testing.assert_allclose(np.var(np.asarray(w)), 2.0 / n, rtol=0.06)
    z = np.asarray(I.variance_scaling(1.0, "fan_in", "uniform")(key, (200, 300), jnp.complex64))
    assert z.dtype == np.complex64
    np.testing.assert_allclose(np.mean(np.abs(z) ** 2), 1 / 200, rtol=0.05)
    assert np.abs(z).max() <= np.sqrt(2 / 200) * (1 + 1e-6)  # a disk of that radius


def test_orthogonal_and_delta_orthogonal():
    key = random.PRNGKey(2)
    w = np.asarray(I.orthogonal(scale=3.0)(key, (4, 7)), np.float64)
    np.testing.assert_allclose(w @ w.T, 9 * np.eye(4), atol=1e-5)
    w = np.asarray(I.orthogonal(column_axis=0)(key, (5, 2, 3)), np.float64)
    m = np.moveaxis(w, 0, -1).reshape(6, 5)
    np.testing.assert_allclose(m.T @ m, np.eye(5), atol=1e-5)
    k = np.asarray(I.delta_orthogonal()(key, (3, 3, 4, 6)), np.float64)
    centre = k[1, 1]
    np.testing.assert_allclose(centre @ centre.T, np.eye(4), atol=1e-5)
    assert np.count_nonzero(k) == np.count_nonzero(centre)
    assert np.asarray(I.orthogonal()(key, (0, 3))).shape == (0, 3)


def test_constants_dtypes_typed_keys_and_jit():
    key = random.key(3)
    assert np.asarray(I.constant(2.5, jnp.float16)(key, (2,))).dtype == np.float16
    np.testing.assert_array_equal(I.zeros(key, (2, 2)), np.zeros((2, 2), np.float32))
    jitted = morphax.jit(lambda k: I.he_normal()(k, (3, 4)))(random.PRNGKey(5))
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(I.he_normal()(random.PRNGKey(5), (3, 4))))
    per_key = morphax.vmap(lambda k: I.glorot_uniform()(k, (2, 3)))(random.split(random.PRNGKey(6), 4))
    assert per_key.shape == (4, 2, 3)
    np.testing.assert_array_equal(
        np.asarray(per_key[1]), np.asarray(I.glorot_uniform()(random.split(random.PRNGKey(6), 4)[1], (2, 3)))
    )


def test_errors_like_jax():
    key = random.PRNGKey(0)
    with pytest.raises(ValueError, match="at least 2D"):
        I.glorot_uniform()(key, (5,))
    with pytest.raises(ValueError, match="invalid mode"):
        I.variance_scaling(1.0, "fan_max", "normal")(key, (2, 2))
    with pytest.raises(ValueError, match="invalid distribution"):
        I.variance_scaling(1.0, "fan_in", "cauchy")(key, (2, 2))
    with pytest.raises(ValueError, match="requires at least a 2D shape"):
        I.orthogonal()(key, (3,))
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        I.delta_orthogonal()(key, (3, 3))
    with pytest.raises(ValueError, match="fan_in"):
        I.delta_orthogonal()(key, (3, 5, 4))
