"""vmap over an empty batch (size 0) of a slice or gather whose operand and indices are both batched
(optax's Hungarian algorithm under vmap of zero problems): JAX gives empty results of the right
shape, taking slice size 0 along the paired batching axis; morphax used to ask for size 1 and
raise. Expected shapes and values are JAX 0.10.2's."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax


def _dynamic_slice(a, i):
    return lax.dynamic_slice(a, (i,), (2,))


@pytest.mark.parametrize(
    "fn, operand_shape, want",
    [
        (_dynamic_slice, (0, 5), (0, 2)),
        (lambda a, i: a[i], (0, 3, 4), (0, 4)),
        (lambda a, i: a[i, 1:3], (0, 3, 4), (0, 2)),
    ],
)
@pytest.mark.parametrize("jit", [False, True])
def test_vmap_over_empty_batch(fn, operand_shape, want, jit):
    f = morphax.vmap(fn)
    f = morphax.jit(f) if jit else f
    out = f(jnp.zeros(operand_shape), jnp.zeros((0,), jnp.int32))
    assert out.shape == want and out.dtype == jnp.float32


def test_vmap_dynamic_slice_values_unchanged_for_a_real_batch():
    out = morphax.vmap(_dynamic_slice)(jnp.arange(10.0).reshape(2, 5), jnp.array([1, 3]))
    np.testing.assert_array_equal(out, [[1.0, 2.0], [8.0, 9.0]])


def test_vmap_of_scan_indexing_over_empty_batch():
    # The shape of optax's Hungarian algorithm: a scan whose body indexes with a carried index.
    def body(a):
        def step(c, _):
            return c + a[c % a.shape[0], 0].astype(jnp.int32), None

        return lax.scan(step, jnp.int32(0), jnp.arange(3))[0]

    assert morphax.vmap(body)(jnp.zeros((0, 2, 2))).shape == (0,)
    np.testing.assert_array_equal(morphax.vmap(body)(jnp.ones((2, 2, 2))), [3, 3])
