"""JAX's behaviour in details flax, equinox and chex rely on, found running them on morphax: jit
with out_shardings all None, custom_jvp under vmap keeping unbatched operands unbatched, None in
custom-rule pytrees, keyword arguments flax passes (einsum's `_dot_general`, `out_sharding`,
ShapedArray's `sharding`), random samplers' `out_sharding`, scan's carry check against the carry on
entry, and key arrays as Arrays. Each expected value is what JAX 0.10 gives."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import core


def test_jit_with_out_shardings_all_none_places_results_by_default():
    # flax.nnx.jit passes out_shardings as a pytree of None; JAX treats that as unspecified.
    f = morphax.jit(lambda x: (x + 1, x * 2), out_shardings=(None, None))
    a, b = f(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(a), [2.0, 2.0])
    assert a.sharding == jnp.ones(2).sharding and b.committed is False


def test_custom_jvp_under_vmap_keeps_unbatched_operands_unbatched():
    # equinox.error_if branches (lax.cond) on a predicate reduced over the batch inside a
    # custom_jvp; broadcasting it along the batch would turn the cond into a select running both
    # branches. JAX 0.10 gives these outputs and never calls the untaken branch's callback.
    calls = []

    @morphax.custom_jvp
    def f(x, pred):
        def hit(x):
            morphax.debug.callback(lambda: calls.append(1))
            return x * 2

        return morphax.lax.cond(pred, hit, lambda x: x, x)

    f.defjvp(lambda p, t: (f(*p), t[0]))
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(np.asarray(morphax.vmap(f, in_axes=(0, None))(x, False)), [0, 1, 2])
    grads = morphax.vmap(morphax.grad(f), in_axes=(0, None))(x, False)
    np.testing.assert_array_equal(np.asarray(grads), [1, 1, 1])
    assert calls == []
    np.testing.assert_array_equal(
        np.asarray(morphax.jit(morphax.vmap(f, in_axes=(0, None)))(x, True)), [0, 2, 4]
    )
    assert calls == [1]


def test_custom_rules_keep_none_in_argument_and_output_trees():
    # A pytree holding None (an empty subtree) keeps it in its tangents and cotangents, as JAX
    # does; equinox's checkpointed while_loop passes such trees through custom_jvp/custom_vjp.
    @morphax.custom_jvp
    def ident(d):
        return d

    seen = []

    def ident_jvp(primals, tangents):
        seen.append(morphax.tree_util.tree_structure(tangents[0]))
        return primals[0], tangents[0]

    ident.defjvp(ident_jvp, symbolic_zeros=True)

    def g(x):
        out = ident((None, x, (x * 2, None)))
        return out[1] + out[2][0]

    assert float(morphax.grad(g)(1.0)) == 3.0
    assert seen[-1] == morphax.tree_util.tree_structure((None, 0, (0, None)))

    @morphax.custom_vjp
    def h(d):
        return d[1] * 2

    h.defvjp(lambda d: (h(d), None), lambda res, ct: ((None, ct * 2, None),))
    assert float(morphax.grad(lambda x: h((None, x, None)))(1.5)) == 2.0


def test_keywords_flax_passes_einsum_conv_and_shaped_array():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(2, 4, 5)).astype(np.float32)
    dims_seen = []

    def counting_dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
        dims_seen.append(dimension_numbers)
        return morphax.lax.dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)

    want = np.einsum("bij,bjk->bik", a, b)
    got = jnp.einsum("bij,bjk->bik", a, b, _dot_general=counting_dot_general)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    assert dims_seen == [(((1,), (2,)), ((0,), (0,)))]
    np.testing.assert_allclose(
        np.asarray(jnp.einsum("bij,bjk->bik", a, b, _dot_general=morphax.lax.dot_general)), want, rtol=1e-5
    )
    x, k = jnp.ones((1, 1, 4, 4)), jnp.ones((1, 1, 3, 3))
    out = morphax.lax.conv_general_dilated(x, k, (1, 1), "VALID", out_sharding=None)
    np.testing.assert_array_equal(np.asarray(out), np.full((1, 1, 2, 2), 9.0))
    aval = core.ShapedArray((2, 3), np.float32, sharding=None)
    assert aval == core.ShapedArray((2, 3), np.float32)


def test_random_samplers_take_out_sharding():
    # flax.nnx.Dropout passes out_sharding=typeof(x).sharding to random.bernoulli.
    key = morphax.random.key(0)
    x = jnp.ones((2, 3))
    want = morphax.random.bernoulli(key, 0.5, x.shape)
    got = morphax.random.bernoulli(key, 0.5, x.shape, out_sharding=morphax.typeof(x).sharding)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    device = morphax.sharding.SingleDeviceSharding(morphax.devices()[0])
    got = morphax.random.normal(key, (3,), out_sharding=device)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(morphax.random.normal(key, (3,))))
    assert got.sharding == device
    with pytest.raises(TypeError, match="out_sharding"):
        morphax.random.split(key, out_sharding=None)  # JAX's split takes none either


def test_scan_checks_the_carry_against_its_structure_on_entry():
    # flax.nnx's scan body pops the deques of the carry it receives and returns refilled ones; JAX
    # compares the output with the carry's structure on entry, not with the emptied containers.
    class Queue:
        def __init__(self, items):
            self.items = list(items)

    morphax.tree_util.register_pytree_node(Queue, lambda q: (q.items, None), lambda _, xs: Queue(xs))

    def body(carry, x):
        total, queue = carry
        item = queue.items.pop(0)  # mutates the container scan passed in
        return (total + item * x, Queue([item])), total

    (total, _), ys = morphax.lax.scan(body, (0.0, Queue([2.0])), jnp.arange(3.0))
    assert float(total) == 6.0 and np.asarray(ys).tolist() == [0.0, 0.0, 2.0]
    with pytest.raises(TypeError, match="same pytree structure"):
        morphax.lax.scan(lambda c, x: ((c[0], Queue([])), x), (0.0, Queue([1.0])), jnp.ones(2))


def test_key_array_around_a_placeholder_is_not_an_array():
    # Tree utilities (flax.nnx's) unflatten key arrays around None; such a shell is no Array.
    key = morphax.random.key(0)
    shell = morphax.tree_util.tree_map(lambda _: None, key)
    assert isinstance(key, morphax.Array) and not isinstance(shell, morphax.Array)


def test_linear_transpose_takes_types_for_primals():
    # JAX uses only the primals' shapes and dtypes (equinox passes ShapedArrays).
    f = lambda x: 2 * x  # noqa: E731
    for primal in (
        core.ShapedArray((3,), np.float32),
        morphax.ShapeDtypeStruct((3,), jnp.float32),
        jnp.zeros(3),
    ):
        (ct,) = morphax.linear_transpose(f, primal)(jnp.ones(3))
        np.testing.assert_array_equal(np.asarray(ct), [2.0, 2.0, 2.0])


def test_aux_data_may_hold_non_arrays():
    # JAX 0.10: ((1.0, 'hi'), 2.0); equinox's filter_value_and_grad returns strings in aux.
    (value, aux), grad = morphax.value_and_grad(lambda x: (x**2, "hi"), has_aux=True)(1.0)
    assert (float(value), aux, float(grad)) == (1.0, "hi", 2.0)
    grad, aux = morphax.grad(lambda x: (x**2, {"a": "hi", "b": x}), has_aux=True)(3.0)
    assert float(grad) == 6.0 and aux["a"] == "hi" and float(aux["b"]) == 3.0
    _, _, aux = morphax.jvp(lambda x: (x * 2, ["s", x]), (1.0,), (1.0,), has_aux=True)
    assert aux[0] == "s" and float(aux[1]) == 1.0
    _, _, aux = morphax.vjp(lambda x: (x * 2, None), 1.0, has_aux=True)
    assert aux is None


def test_custom_jvp_rule_may_return_the_symbolic_zeros_it_got():
    # With symbolic_zeros=True a rule may pass a SymbolicZero tangent through (equinox's while
    # loops do); JAX treats it as a zero tangent.
    @morphax.custom_jvp
    def f(x, y):
        return x * 2, y

    f.defjvp(lambda p, t: (f(*p), (t[0] * 2, t[1])), symbolic_zeros=True)
    _, (tx, ty) = morphax.jvp(lambda x: f(x, 3.0), (1.0,), (1.0,))
    assert float(tx) == 2.0 and float(ty) == 0.0
    assert float(morphax.jit(morphax.grad(lambda x: sum(f(x, 3.0))))(1.0)) == 2.0


def test_reduce_window_max_over_integers_from_minus_infinity():
    # equinox's MaxPool starts a max from -inf also for integer inputs; JAX 0.10 gives [[1 3 5]]
    # and [[1 3 5]] (padded) here: -inf is the max's identity, not a value to fold in.
    x = jnp.arange(6).reshape(1, 6)
    got = morphax.lax.reduce_window(x, -np.inf, morphax.lax.max, (1, 2), (1, 2), "VALID")
    assert got.dtype == x.dtype and np.asarray(got).tolist() == [[1, 3, 5]]
    got = morphax.lax.reduce_window(x, float("-inf"), morphax.lax.max, (1, 3), (1, 2), ((0, 0), (1, 1)))
    assert np.asarray(got).tolist() == [[1, 3, 5]]
    got = morphax.lax.reduce_window(x, 100, morphax.lax.min, (1, 2), (1, 2), "VALID")
    assert np.asarray(got).tolist() == [[0, 2, 4]]


def test_dtypes_narrow_floats_are_scalar_types():
    # jax.dtypes.bfloat16 is ml_dtypes' scalar type (equinox's deserialisation isinstance-checks
    # against it); arrays and dtypes built from it are bfloat16.
    bf16 = morphax.dtypes.bfloat16
    assert isinstance(bf16, type) and np.dtype(bf16).name == "bfloat16"
    assert isinstance(np.array(1.5, bf16)[()], bf16)
    assert jnp.ones(2, bf16).dtype == np.dtype(bf16)
