"""equinox, unmodified, on morphax through `morphax.compat` (skipped where equinox is absent): an
MLP trained with `eqx.filter_jit` / `eqx.filter_value_and_grad` matches a float64 NumPy
re-implementation of the same model and SGD steps, computed here from the model's initial
weights; `filter_grad`, `filter_vmap` and equinox's own primitives (defined through
`jax.extend.core.Primitive`) work under jit, grad and vmap."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("equinox") is None or importlib.util.find_spec("jaxtyping") is None:
    pytest.skip("equinox is not installed (pip install --no-deps equinox jaxtyping)", allow_module_level=True)

import morphax.compat

# Bound by the fixture below, once jax is mapped onto morphax.
eqx = jax = jnp = None


@pytest.fixture(scope="module", autouse=True)
def _libraries():
    """Map jax onto morphax for this module's tests only (installed at collection it would make
    other modules see a jax already imported), import the libraries through it, then unmap it."""
    global eqx, jax, jnp
    was_installed = morphax.compat.is_installed()
    morphax.compat.install()
    eqx, jax, jnp = (importlib.import_module(m) for m in ("equinox", "jax", "jax.numpy"))
    yield
    if not was_installed:
        morphax.compat.uninstall()


LR, STEPS = 0.1, 5


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(16, 4)).astype(np.float32), rng.normal(size=(16, 2)).astype(np.float32)


def _reference_sgd(weights, x, y):
    """Full-batch SGD on mean squared error of a tanh MLP, in float64. `weights`: [(W (out, in),
    b)]. Returns the loss before each step and the final weights."""
    weights = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in weights]
    x, y = x.astype(np.float64), y.astype(np.float64)
    losses = []
    for _ in range(STEPS):
        acts = [x]
        for i, (w, b) in enumerate(weights):
            z = acts[-1] @ w.T + b
            acts.append(np.tanh(z) if i < len(weights) - 1 else z)
        out = acts[-1]
        losses.append(np.mean((out - y) ** 2))
        delta = 2 * (out - y) / out.size
        grads = []
        for i in reversed(range(len(weights))):
            grads.append((delta.T @ acts[i], delta.sum(0)))
            delta = delta @ weights[i][0]
            if i > 0:
                delta = delta * (1 - acts[i] ** 2)
        grads.reverse()
        weights = [(w - LR * gw, b - LR * gb) for (w, b), (gw, gb) in zip(weights, grads)]
    return np.array(losses), weights


def test_mlp_training_matches_numpy_float64():
    x, y = _data()
    model = eqx.nn.MLP(4, 2, 8, 2, activation=jax.nn.tanh, key=jax.random.PRNGKey(0))
    initial = [(layer.weight, layer.bias) for layer in model.layers]

    def loss_fn(m, x, y):
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)

    traces = []

    @eqx.filter_jit
    def step(m, x, y):
        traces.append(1)  # runs once per trace: later steps hit filter_jit's cache
        loss, grads = eqx.filter_value_and_grad(loss_fn)(m, x, y)
        return eqx.apply_updates(m, jax.tree.map(lambda g: -LR * g, grads)), loss

    losses = []
    for _ in range(STEPS):
        model, loss = step(model, x, y)
        losses.append(float(loss))
    assert len(traces) == 1
    want_losses, want_weights = _reference_sgd(initial, x, y)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for layer, (w, b) in zip(model.layers, want_weights):
        np.testing.assert_allclose(np.asarray(layer.weight), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(layer.bias), b, rtol=1e-5, atol=1e-6)


def test_filter_grad_and_filter_vmap_leave_non_arrays_alone():
    x, y = _data()
    model = eqx.nn.MLP(4, 2, 8, 2, activation=jax.nn.tanh, key=jax.random.PRNGKey(1))
    grads = eqx.filter_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
    assert isinstance(grads, eqx.nn.MLP) and grads.activation is None
    assert grads.layers[0].weight.shape == (8, 4)
    out = eqx.filter_vmap(model)(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(out), np.asarray(jax.vmap(model)(x)), rtol=1e-6)


def test_equinox_primitives_under_transformations():
    # error_if is built on equinox's own primitives (jax.extend.core.Primitive with JVP, transpose
    # and batching rules from jax.interpreters); unvmap_any is one of them.
    from equinox.internal import unvmap_any

    def f(x):
        x = eqx.error_if(x, x < -10.0, "too small")
        return jnp.sum(x**2)

    x = jnp.asarray([1.0, -2.0, 3.0])
    np.testing.assert_allclose(float(jax.jit(f)(x)), 14.0)
    np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), [2.0, -4.0, 6.0])
    np.testing.assert_allclose(
        np.asarray(jax.vmap(jax.grad(f))(jnp.stack([x, -x]))), [[2, -4, 6], [-2, 4, -6]]
    )
    with pytest.raises(Exception, match="too small"):
        jax.jit(f)(jnp.asarray([-20.0, 1.0]))
    assert bool(jax.vmap(lambda v: unvmap_any(v > 2))(x)[0])


def test_error_if_keeps_a_weak_int_weak():
    # error_if is lax.cond(pred, <callback>, lambda: x): the cond takes the false branch's weak
    # type (JAX 0.10.2), so the weak int does not widen an int8. JAX: Array(4, dtype=int8).
    def f(x):
        n = eqx.error_if(jnp.asarray(3), x < 0, "negative")
        return n + jnp.int8(1)

    assert repr(jax.jit(f)(1.0)) == "Array(4, dtype=int8)"


@pytest.mark.parametrize("kind", ["checkpointed", "bounded"])
@pytest.mark.parametrize("order", ["grad", "vmap_of_grad", "grad_of_vmap"])
def test_while_loop_with_buffers_differentiates_under_vmap(kind, order):
    # The checkpointed loop's custom_vjp passes Python-bool `perturbed` flags as residuals, which
    # must stay unbatched under vmap (JAX's batching of custom_vjp). JAX: 14.979911 for each.
    def loop(x):
        def body(c):
            i, b, y = c
            return i + 1, b.at[i].set(y * i), y * 1.1

        carry = (0, jnp.zeros(5), x)
        out = eqx.internal.while_loop(
            lambda c: c[0] < 5, body, carry, max_steps=5, kind=kind, buffers=lambda c: c[1]
        )
        return out[1].sum() + out[2]

    # d/dx [sum_i i * 1.1**i * x + 1.1**5 * x], in float64.
    expected = sum(i * 1.1**i for i in range(5)) + 1.1**5
    xs = jnp.asarray([1.0, 2.0])
    if order == "grad":
        got = [float(jax.grad(loop)(1.0))]
    elif order == "vmap_of_grad":
        got = np.asarray(jax.vmap(jax.grad(loop))(xs))
    else:
        got = np.asarray(jax.grad(lambda x: jax.vmap(loop)(x).sum())(xs))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
