"""Buffer donation as JAX 0.10.2 does it on the CPU (answers recorded with jax 0.10.2, jaxlib's
CPU backend): each output takes the buffer of the first remaining donated input of its shape and
dtype (`unsafe_buffer_pointer` is the donated input's), whatever computes it -- a fused kernel, a
scatter, a matmul, or the NumPy program that runs while the C build is in the background -- and
compiling warns once about donated inputs no output can use. equinox's test_jit compares the
pointers and expects the warning (donate="warn")."""

import warnings

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp


def _fresh(values, dtype=np.float32) -> morphax.Array:
    """An array whose buffer morphax computed (nothing else refers to it), ready."""
    return (jnp.asarray(np.asarray(values, dtype)) * 1).block_until_ready()


@pytest.mark.parametrize("backend", ["numpy", None])  # None: the configured backend (C), maybe interim
@pytest.mark.parametrize(
    "fun, n",
    [
        (lambda x: x + 1.0, 1),  # JAX: the donated input's pointer
        (lambda x: x.at[0].add(1.0), 1000),  # a scatter: JAX updates in place
        (lambda x: jnp.tanh(x @ x) + x, 9),  # a matmul reads x: JAX still aliases the output
    ],
)
def test_the_output_lives_in_the_donated_buffer(backend, fun, n):
    x = _fresh(np.linspace(-1, 1, n).reshape((3, 3) if n == 9 else (n,) if n > 1 else ()))
    want = np.asarray(morphax.jit(fun)(x))
    before = x.unsafe_buffer_pointer()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = morphax.jit(fun, donate_argnums=0, backend=backend)(x)
    assert x.is_deleted()
    assert out.unsafe_buffer_pointer() == before
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", None])
def test_outputs_take_donated_inputs_in_order(backend):
    # JAX: (x * y, x + y) with both donated: the first output in x's buffer, the second in y's.
    x, y = _fresh([1.0, 2.0, 3.0, 4.0]), _fresh([2.0, 2.0, 2.0, 2.0])
    px, py = x.unsafe_buffer_pointer(), y.unsafe_buffer_pointer()
    prod, total = morphax.jit(lambda x, y: (x * y, x + y), donate_argnums=(0, 1), backend=backend)(x, y)
    assert (prod.unsafe_buffer_pointer(), total.unsafe_buffer_pointer()) == (px, py)
    np.testing.assert_array_equal(np.asarray(prod), [2.0, 4.0, 6.0, 8.0])
    np.testing.assert_array_equal(np.asarray(total), [3.0, 4.0, 5.0, 6.0])


def test_an_unusable_donation_warns_once_per_compilation():
    # JAX: "Some donated buffers were not usable: float32[10]." at the first call only.
    f = morphax.jit(lambda x, y: x + jnp.sum(y), donate_argnums=(0, 1))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        f(_fresh(1.0), _fresh(np.ones(10)))
        f(_fresh(1.0), _fresh(np.ones(10)))
    assert [r.category for r in record] == [UserWarning]
    assert str(record[0].message).startswith("Some donated buffers were not usable: float32[10].\n")


def test_an_input_matching_an_output_by_size_only_does_not_warn():
    # JAX: f32[10] donated to a program returning f32[2,5] is usable (same element count).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = morphax.jit(lambda x: x.reshape(2, 5) + 1, donate_argnums=0)(_fresh(np.ones(10)))
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 5), 2.0))


def test_no_donation_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        morphax.jit(lambda x, y: x + jnp.sum(y))(_fresh(1.0), _fresh(np.ones(10)))
