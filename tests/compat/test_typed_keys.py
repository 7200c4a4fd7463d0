"""Typed PRNG keys are single pytree leaves, as in JAX 0.10.2 (issue 33 item 3).

`random.key(0)` is one leaf of dtype ``key<fry>`` for the tree utilities, and crosses jit, vmap,
scan, cond and device_put as a key array. Expected values come from the raw `PRNGKey` path or a
Python loop, not from the typed path under test."""

import numpy as np
import pytest

import morphax as jax
import morphax.numpy as jnp
from morphax import lax, random


def _bits(k):
    return np.asarray(random.key_data(k))


def test_key_is_one_leaf_and_the_same_object():
    k = random.key(0)
    leaves = jax.tree.leaves({"k": k})
    assert len(leaves) == 1 and leaves[0] is k
    assert jax.tree_util.tree_leaves([k, 1.0])[0] is k
    assert str(jax.tree.structure({"k": k})) == "PyTreeDef({'k': *})"
    assert jax.tree.leaves({"k": k}, is_leaf=lambda x: False)[0] is k
    [(path, leaf)] = jax.tree_util.tree_leaves_with_path({"k": k})
    assert path == (jax.tree_util.DictKey("k"),) and leaf is k
    assert jax.tree_util.all_leaves([k])
    assert not jax.tree_util.default_registry.flatten_one_level(k)
    with pytest.raises(ValueError, match="can't tree-flatten"):
        jax.tree_util.flatten_one_level(k)


def test_tree_map_and_flatten_round_trip_see_the_key_array():
    k = random.key(3)
    seen = []
    out = jax.tree.map(lambda x: seen.append(x) or x, {"k": k, "x": 1.0})
    assert seen[0] is k
    assert out["k"].dtype == random.key(0).dtype
    assert jax.tree.map(lambda x: x.shape, {"k": random.split(k, 3)}) == {"k": (3,)}
    leaves, treedef = jax.tree.flatten((k, 2.0))
    assert len(leaves) == 2 and leaves[0] is k
    back = jax.tree.unflatten(treedef, leaves)
    np.testing.assert_array_equal(_bits(back[0]), np.asarray(random.PRNGKey(3)))


def test_jit_takes_and_returns_keys():
    k = random.key(0)
    out = jax.jit(lambda k: random.split(k)[0])(k)
    assert out.dtype == k.dtype and out.shape == ()
    np.testing.assert_array_equal(_bits(out), np.asarray(random.split(random.PRNGKey(0))[0]))
    np.testing.assert_array_equal(_bits(out), [1797259609, 2579123966])  # JAX 0.10.2's bits


def test_vmap_over_split_keys_matches_a_python_loop():
    keys = random.split(random.key(0), 4)
    got = jax.vmap(lambda k: random.uniform(k, (2,)))(keys)
    raw = random.split(random.PRNGKey(0), 4)
    expected = np.stack([np.asarray(random.uniform(raw[i], (2,))) for i in range(4)])
    np.testing.assert_array_equal(np.asarray(got), expected)
    back = jax.vmap(lambda k: random.fold_in(k, 1))(keys)
    assert back.shape == (4,) and back.dtype == keys.dtype
    np.testing.assert_array_equal(
        _bits(back), np.stack([np.asarray(random.fold_in(raw[i], 1)) for i in range(4)])
    )


def test_scan_carries_a_key():
    def body(c, _):
        c, s = random.split(c)
        return c, random.uniform(s)

    carry, ys = lax.scan(body, random.key(0), None, length=3)
    c, expected = random.PRNGKey(0), []
    for _ in range(3):
        c, s = random.split(c)
        expected.append(float(random.uniform(s)))
    np.testing.assert_array_equal(np.asarray(ys), np.asarray(expected, np.float32))
    np.testing.assert_array_equal(_bits(carry), np.asarray(c))
    np.testing.assert_array_equal(_bits(carry), [683029726, 1624662641])  # JAX 0.10.2's bits


@pytest.mark.parametrize("pred", [True, False])
def test_cond_takes_and_returns_keys(pred):
    k = random.key(0)
    out = lax.cond(pred, lambda k: random.split(k)[1], lambda k: k, k)
    assert out.dtype == k.dtype
    expected = random.split(random.PRNGKey(0))[1] if pred else random.PRNGKey(0)
    np.testing.assert_array_equal(_bits(out), np.asarray(expected))


def test_device_put_shape_and_key_data_round_trip():
    keys = random.split(random.key(5), 4)
    put = jax.device_put(keys)
    assert put.dtype == keys.dtype and isinstance(put, jax.Array)
    np.testing.assert_array_equal(_bits(put), _bits(keys))
    assert jnp.shape(keys) == (4,) and jnp.ndim(keys) == 1 and jnp.shape(random.key(0)) == ()
    data = random.key_data(keys)
    assert data.shape == (4, 2) and data.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(data), np.asarray(random.split(random.PRNGKey(5), 4)))
    np.testing.assert_array_equal(_bits(random.wrap_key_data(data)), np.asarray(data))
    assert random.key_impl(keys) == "threefry2x32"


@pytest.mark.parametrize(
    "op, message",
    [
        (lambda k: k + 1, "add does not accept dtypes key<fry>, int32."),
        (lambda k: jnp.add(k, 1), "add does not accept dtypes key<fry>, int32."),
        (lambda k: jnp.multiply(2, k), "multiply does not accept dtypes int32, key<fry>."),
        (lambda k: 1 + k, "add does not accept dtypes int32, key<fry>."),
        (lambda k: k * 2.0, "multiply does not accept dtypes key<fry>, float32."),
        (lambda k: k - k, "sub does not accept dtype key<fry> at position 0."),
        (lambda k: -k, "neg does not accept dtype key<fry>."),
        (lambda k: k < 1, "less does not accept dtypes key<fry>, int32."),
    ],
)
def test_arithmetic_on_keys_raises_jax_type_errors(op, message):
    with pytest.raises(TypeError) as e:
        op(random.key(0))
    assert str(e.value).startswith(message)


def test_where_selects_keys_and_keys_are_not_complex():
    keys = random.split(random.key(1), 3)
    other = random.key(2)
    cond = jnp.array([True, False, True])
    raw = np.asarray(random.split(random.PRNGKey(1), 3))
    expected = np.where(np.asarray([True, False, True])[:, None], raw, np.asarray(random.PRNGKey(2)))
    np.testing.assert_array_equal(_bits(jnp.where(cond, keys, other)), expected)
    np.testing.assert_array_equal(_bits(jax.jit(jnp.where)(cond, keys, other)), expected)
    with pytest.raises(ValueError, match="not a valid dtype for JAX type promotion"):
        jnp.where(True, other, 1)
    assert not jnp.iscomplexobj(other) and jnp.isrealobj(other)
