"""`jnp.array(x)` and `x.copy()` give a new array, as in JAX (0.10.2): JAX binds its `copy`
primitive, so the result is a distinct buffer that can be donated to a jit call next to the
original (optax's schedule-free optimizer keeps `params.copy()` in its state and donates both).
`jnp.asarray(x)` and `jnp.array(x, copy=False)` return `x` itself."""

import numpy as np

import morphax
import morphax.numpy as jnp


def test_array_copies_and_asarray_does_not():
    x = jnp.array([-1.0, 10.0, 1.0])
    assert jnp.array(x) is not x and x.copy() is not x and jnp.asarray(x, copy=True) is not x
    assert jnp.asarray(x) is x and jnp.array(x, copy=False) is x
    np.testing.assert_array_equal(x.copy(), x)
    assert x.copy().dtype == x.dtype and jnp.array(x, dtype=jnp.int32).dtype == jnp.int32


def test_a_copy_can_be_donated_next_to_its_original():
    x = jnp.array([-1.0, 10.0, 1.0])
    step = morphax.jit(lambda a, b: (a + 1, b + 2), donate_argnums=(0, 1))
    a, b = step(x, x.copy())
    np.testing.assert_array_equal(a, [0.0, 11.0, 2.0])
    np.testing.assert_array_equal(b, [1.0, 12.0, 3.0])


def test_copy_is_staged_and_transparent_to_transformations():
    # JAX: { lambda ; a:f32[2]. let b:f32[2] = copy a in (b,) }
    jaxpr = morphax.make_jaxpr(lambda x: jnp.array(x))(jnp.ones(2))
    assert [eqn.primitive.name for eqn in jaxpr.eqns] == ["copy"]
    assert not morphax.make_jaxpr(lambda x: jnp.asarray(x))(jnp.ones(2)).eqns
    np.testing.assert_array_equal(morphax.grad(lambda x: jnp.array(x).sum())(jnp.ones(2)), [1.0, 1.0])
    np.testing.assert_array_equal(morphax.vmap(lambda x: x.copy() * 2)(jnp.ones((2, 2))), 2 * np.ones((2, 2)))
