"""flax, unmodified, on morphax through `morphax.compat` (skipped where flax or optax is absent): a
flax.linen MLP trained with optax SGD under `jax.jit`, and a flax.nnx MLP trained with
`nnx.Optimizer` under `nnx.jit`, each match a float64 NumPy re-implementation of the same model
and steps computed here from the model's initial parameters; nnx's trace-state checks work."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

if any(importlib.util.find_spec(name) is None for name in ("flax", "optax", "chex")):
    pytest.skip(
        "flax and optax are not installed (pip install --no-deps flax optax chex)", allow_module_level=True
    )

import morphax.compat

# Bound by the fixture below, once jax is mapped onto morphax.
jax = jnp = optax = nn = nnx = LinenMLP = NnxMLP = None


@pytest.fixture(scope="module", autouse=True)
def _libraries():
    """Map jax onto morphax for this module's tests only (installed at collection it would make
    other modules see a jax already imported), import the libraries through it, then unmap it."""
    global jax, jnp, optax, nn, nnx
    was_installed = morphax.compat.is_installed()
    morphax.compat.install()
    jax, jnp, optax = (importlib.import_module(m) for m in ("jax", "jax.numpy", "optax"))
    nn, nnx = importlib.import_module("flax.linen"), importlib.import_module("flax.nnx")
    _define_models()
    yield
    if not was_installed:
        morphax.compat.uninstall()


LR, STEPS = 0.1, 5


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(16, 4)).astype(np.float32), rng.normal(size=(16, 2)).astype(np.float32)


def _reference_sgd(layers, x, y):
    """Full-batch SGD on mean squared error of a tanh MLP, in float64. `layers`: [(kernel (in,
    out), bias)]. Returns the loss before each step and the final layers."""
    layers = [(np.asarray(k, np.float64), np.asarray(b, np.float64)) for k, b in layers]
    x, y = x.astype(np.float64), y.astype(np.float64)
    losses = []
    for _ in range(STEPS):
        acts = [x]
        for i, (k, b) in enumerate(layers):
            z = acts[-1] @ k + b
            acts.append(np.tanh(z) if i < len(layers) - 1 else z)
        out = acts[-1]
        losses.append(np.mean((out - y) ** 2))
        delta = 2 * (out - y) / out.size
        grads = []
        for i in reversed(range(len(layers))):
            grads.append((acts[i].T @ delta, delta.sum(0)))
            delta = delta @ layers[i][0].T
            if i > 0:
                delta = delta * (1 - acts[i] ** 2)
        grads.reverse()
        layers = [(k - LR * gk, b - LR * gb) for (k, b), (gk, gb) in zip(layers, grads)]
    return np.array(losses), layers


def _define_models():
    """The models, defined once the libraries are imported."""
    global LinenMLP, NnxMLP

    class LinenMLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            hidden = nn.Dense(8)  # created first: named Dense_0
            return nn.Dense(2)(nn.tanh(hidden(x)))

    class NnxMLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(4, 8, rngs=rngs)
            self.l2 = nnx.Linear(8, 2, rngs=rngs)

        def __call__(self, x):
            return self.l2(jnp.tanh(self.l1(x)))


def test_linen_mlp_training_with_optax_matches_numpy_float64():
    x, y = _data()
    model = LinenMLP()
    params = model.init(jax.random.PRNGKey(0), x)
    p = params["params"]
    initial = [(p[name]["kernel"], p[name]["bias"]) for name in ("Dense_0", "Dense_1")]
    tx = optax.sgd(LR)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda q: jnp.mean((model.apply(q, x) - y) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for _ in range(STEPS):
        params, opt_state, loss = step(params, opt_state, x, y)
        losses.append(float(loss))
    want_losses, want_layers = _reference_sgd(initial, x, y)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for name, (k, b) in zip(("Dense_0", "Dense_1"), want_layers):
        np.testing.assert_allclose(np.asarray(params["params"][name]["kernel"]), k, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(params["params"][name]["bias"]), b, rtol=1e-5, atol=1e-6)


def test_linen_lazy_init_and_scan_use_partial_evaluation():
    # flax's lazy_init and nn.scan split their work with jax.interpreters.partial_eval over a
    # WrappedFun flattened by jax.api_util (morphax.api_util).
    x, _ = _data()
    model = LinenMLP()
    params = model.lazy_init(jax.random.PRNGKey(0), jax.ShapeDtypeStruct((16, 4), jnp.float32))
    eager = model.init(jax.random.PRNGKey(0), x)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(eager)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    class Recurrent(nn.Module):
        @nn.compact
        def __call__(self, xs):
            cell = nn.scan(
                nn.SimpleCell,
                variable_broadcast="params",
                split_rngs={"params": False},
                in_axes=1,
                out_axes=1,
            )(features=3)
            return cell(jnp.zeros((xs.shape[0], 3)), xs)[1]

    xs = jnp.asarray(np.random.default_rng(1).normal(size=(2, 5, 4)).astype(np.float32))
    rnn = Recurrent()
    variables = rnn.init(jax.random.PRNGKey(0), xs)
    p = variables["params"]["ScanSimpleCell_0"]
    wi, bi, wh = (
        np.asarray(p["i"]["kernel"], np.float64),
        np.asarray(p["i"]["bias"], np.float64),
        np.asarray(p["h"]["kernel"], np.float64),
    )
    h, want = np.zeros((2, 3)), []
    for t in range(5):  # SimpleCell: h' = tanh(x W_i + b_i + h W_h)
        h = np.tanh(np.asarray(xs[:, t], np.float64) @ wi + bi + h @ wh)
        want.append(h)
    np.testing.assert_allclose(np.asarray(rnn.apply(variables, xs)), np.stack(want, 1), rtol=1e-5, atol=1e-6)


def test_lazy_init_and_scan_reject_dependence_on_unknown_values():
    # A parameter computed from a shape-only input, and a broadcast variable written from the scan
    # body, are the errors flax raises from its partial evaluation.
    from flax import errors  # noqa: PLC0415

    class FromInput(nn.Module):
        @nn.compact
        def __call__(self, x):
            return self.param("p", lambda key: x.sum())

    with pytest.raises(errors.LazyInitError):
        FromInput().lazy_init(jax.random.PRNGKey(0), jax.ShapeDtypeStruct((2,), jnp.float32))

    class Body(nn.Module):
        @nn.compact
        def __call__(self, c, x):
            v = self.variable("state", "s", lambda: jnp.zeros(()))
            v.value = v.value + x.sum()
            return c, x

    class Scanned(nn.Module):
        @nn.compact
        def __call__(self, xs):
            return nn.scan(Body, variable_broadcast="state", split_rngs={"params": False})()(
                jnp.zeros(()), xs
            )

    with pytest.raises(ValueError, match="broadcasted variable has a data dependency"):
        Scanned().init(jax.random.PRNGKey(0), jnp.ones((3, 2)))


def test_partial_eval_by_shape_computes_parameters_and_shapes_the_output():
    # flax.jax_utils.partial_eval_by_shape: the input is only a shape, so the parameters (which do
    # not depend on it) come back as values and the output as a ShapeDtypeStruct.
    from flax import jax_utils  # noqa: PLC0415

    model = LinenMLP()
    out, variables = jax_utils.partial_eval_by_shape(
        lambda x: model.init_with_output(jax.random.PRNGKey(0), x), [((16, 4), jnp.float32)]
    )
    assert isinstance(out, jax.ShapeDtypeStruct)
    x, _ = _data()
    want_out, want = model.init_with_output(jax.random.PRNGKey(0), x)
    assert (out.shape, out.dtype) == (want_out.shape, want_out.dtype)
    for a, b in zip(jax.tree.leaves(variables), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_nnx_mlp_training_matches_numpy_float64():
    x, y = _data()
    model = NnxMLP(nnx.Rngs(0))
    initial = [(np.asarray(layer.kernel[...]), np.asarray(layer.bias[...])) for layer in (model.l1, model.l2)]
    optimizer = nnx.Optimizer(model, optax.sgd(LR), wrt=nnx.Param)

    traces = []

    @nnx.jit
    def step(model, optimizer, x, y):
        traces.append(1)  # runs once per trace: the steps after the first hit nnx.jit's cache
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    losses = [float(step(model, optimizer, x, y)) for _ in range(STEPS)]
    assert len(traces) == 1
    want_losses, want_layers = _reference_sgd(initial, x, y)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for layer, (k, b) in zip((model.l1, model.l2), want_layers):
        np.testing.assert_allclose(np.asarray(layer.kernel[...]), k, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(layer.bias[...]), b, rtol=1e-5, atol=1e-6)


def test_nnx_rejects_state_mutated_from_another_trace():
    model = NnxMLP(nnx.Rngs(0))

    @jax.jit
    def leak(x):
        model.l1.bias[...] = x  # a Variable made outside, mutated inside a jax.jit trace
        return x

    with pytest.raises(
        importlib.import_module("flax.errors").TraceContextError, match="different trace level"
    ):
        leak(jnp.zeros(8))
