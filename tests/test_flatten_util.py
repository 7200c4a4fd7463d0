"""`flatten_util.ravel_pytree`: order, promotion, the unravel round trip and its checks, under jit
and grad."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.flatten_util import ravel_pytree


def test_round_trip_and_order():
    tree = {"b": (np.arange(3, dtype=np.float32), 2.0), "a": np.ones((2, 2), np.float32)}
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(np.asarray(flat), [1, 1, 1, 1, 0, 1, 2, 2])  # dict keys sorted
    back = unravel(flat)
    assert back["a"].shape == (2, 2) and back["b"][1].shape == ()
    np.testing.assert_array_equal(np.asarray(unravel(flat * 2)["b"][0]), [0, 2, 4])


def test_mixed_dtypes_promote_and_convert_back():
    tree = [np.arange(2, dtype=np.int32), np.array([0.5], np.float32), np.array(True)]
    flat, unravel = ravel_pytree(tree)
    assert flat.dtype == jnp.float32
    out = unravel(flat)
    assert [x.dtype for x in out] == [jnp.int32, jnp.float32, jnp.bool_]
    with pytest.raises(TypeError, match="expected dtype float32"):
        unravel(flat.astype(jnp.int32))
    with pytest.raises(ValueError, match="expected shape"):
        unravel(flat[:2])


def test_empty_tree_jit_and_grad():
    flat, unravel = ravel_pytree({})
    assert flat.shape == (0,) and flat.dtype == jnp.float32 and unravel(flat) == {}
    params = {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}
    flat, unravel = ravel_pytree(params)

    def loss(v):
        p = unravel(v)
        return jnp.sum(p["w"] ** 2) + jnp.sum(p["b"] + 1.0)

    g = morphax.jit(morphax.grad(loss))(flat)
    np.testing.assert_allclose(np.asarray(g), np.concatenate([np.ones(3), 2 * np.ones(6)]))
