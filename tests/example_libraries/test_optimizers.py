"""`example_libraries.optimizers` against float64 NumPy implementations of the same update rules:
each optimizer trains a small least-squares model for 20 steps (jitted, on pytrees) and must land on
the reference's parameters and loss; schedules, clipping, the packed state and its errors."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.example_libraries import optimizers

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 4))
Y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.3


def _loss_and_grad_np(w, b):
    r = X @ w + b - Y
    return np.mean(r**2), (2 * X.T @ r / len(Y), 2 * np.mean(r))


def _loss(params):
    w, b = params["w"], params["b"]
    return jnp.mean((X @ w + b - Y) ** 2)


# NumPy float64 versions of each rule: (init(x0) -> state, update(i, g, state) -> state, x(state))
def _np_rules(name, lr):
    z = np.zeros_like
    if name == "sgd":
        return (lambda x: x), (lambda i, g, x: x - lr * g), (lambda x: x)
    if name == "momentum":
        return (
            (lambda x: (x, z(x))),
            (lambda i, g, s: (s[0] - lr * (0.9 * s[1] + g), 0.9 * s[1] + g)),
            (lambda s: s[0]),
        )
    if name == "nesterov":

        def nest(i, g, s):
            v = 0.9 * s[1] + g
            return s[0] - lr * (0.9 * v + g), v

        return (lambda x: (x, z(x))), nest, (lambda s: s[0])
    if name == "adagrad":

        def ada(i, g, s):
            x, gsq, m = s
            gsq = gsq + g**2
            inv = np.where(gsq > 0, 1 / np.sqrt(gsq), 0.0)
            m = 0.1 * g * inv + 0.9 * m
            return x - lr * m, gsq, m

        return (lambda x: (x, z(x), z(x))), ada, (lambda s: s[0])
    if name == "rmsprop":

        def rms(i, g, s):
            avg = s[1] * 0.9 + g**2 * 0.1
            return s[0] - lr * g / np.sqrt(avg + 1e-8), avg

        return (lambda x: (x, z(x))), rms, (lambda s: s[0])
    if name == "rmsprop_momentum":

        def rmsm(i, g, s):
            x, avg, mom = s
            avg = avg * 0.9 + g**2 * 0.1
            mom = 0.9 * mom + lr * g / np.sqrt(avg + 1e-8)
            return x - mom, avg, mom

        return (lambda x: (x, z(x), z(x))), rmsm, (lambda s: s[0])
    if name == "adam":

        def adam(i, g, s):
            x, m, v = s
            m = 0.1 * g + 0.9 * m
            v = 0.001 * g**2 + 0.999 * v
            mhat, vhat = m / (1 - 0.9 ** (i + 1)), v / (1 - 0.999 ** (i + 1))
            return x - lr * mhat / (np.sqrt(vhat) + 1e-8), m, v

        return (lambda x: (x, z(x), z(x))), adam, (lambda s: s[0])
    if name == "adamax":

        def adamax(i, g, s):
            x, m, u = s
            m = 0.1 * g + 0.9 * m
            u = np.maximum(0.999 * u, np.abs(g))
            return x - lr / (1 - 0.9 ** (i + 1)) * m / (u + 1e-8), m, u

        return (lambda x: (x, z(x), z(x))), adamax, (lambda s: s[0])
    raise KeyError(name)


_MAKERS = {
    "sgd": lambda lr: optimizers.sgd(lr),
    "momentum": lambda lr: optimizers.momentum(lr, 0.9),
    "nesterov": lambda lr: optimizers.nesterov(lr, 0.9),
    "adagrad": lambda lr: optimizers.adagrad(lr),
    "rmsprop": lambda lr: optimizers.rmsprop(lr),
    "rmsprop_momentum": lambda lr: optimizers.rmsprop_momentum(lr),
    "adam": lambda lr: optimizers.adam(lr),
    "adamax": lambda lr: optimizers.adamax(lr),
}


@pytest.mark.parametrize("name", sorted(_MAKERS))
def test_trains_to_the_float64_reference(name):
    lr = 0.05
    with morphax.enable_x64():
        opt_init, opt_update, get_params = _MAKERS[name](lr)
        state = opt_init({"w": jnp.zeros(4), "b": jnp.zeros(())})

        @morphax.jit
        def step(i, state):
            return opt_update(i, morphax.grad(_loss)(get_params(state)), state)

        for i in range(20):
            state = step(i, state)
        got = get_params(state)
        final = float(_loss(got))
    init, update, read = _np_rules(name, lr)
    sw, sb = init(np.zeros(4)), init(np.zeros(()))
    for i in range(20):
        _, (gw, gb) = _loss_and_grad_np(read(sw), read(sb))
        sw, sb = update(i, gw, sw), update(i, gb, sb)
    np.testing.assert_allclose(np.asarray(got["w"]), read(sw), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(got["b"]), read(sb), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(final, _loss_and_grad_np(read(sw), read(sb))[0], rtol=1e-10)
    assert final < _loss_and_grad_np(np.zeros(4), 0.0)[0]


def test_sm3_per_axis_accumulators():
    opt_init, opt_update, get_params = optimizers.sm3(0.1)
    x0 = jnp.ones((2, 3))
    state = opt_init(x0)
    g = jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    state = opt_update(0, g, state)
    # first step: the accumulator is g^2, so the step is (1 - momentum) * sign(g) * lr
    np.testing.assert_allclose(np.asarray(get_params(state)), 1 - 0.1 * 0.1, rtol=1e-6)
    assert get_params(state).shape == (2, 3)


def test_schedules():
    assert optimizers.constant(0.3)(100) == 0.3
    np.testing.assert_allclose(float(optimizers.exponential_decay(1.0, 10, 0.5)(20)), 0.25)
    np.testing.assert_allclose(float(optimizers.inverse_time_decay(1.0, 10, 1.0)(5)), 1 / 1.5)
    np.testing.assert_allclose(float(optimizers.inverse_time_decay(1.0, 10, 1.0, staircase=True)(15)), 0.5)
    poly = optimizers.polynomial_decay(1.0, 10, 0.1, power=2.0)
    np.testing.assert_allclose([float(poly(i)) for i in (0, 5, 10, 20)], [1.0, 0.325, 0.1, 0.1], rtol=1e-6)
    piece = optimizers.piecewise_constant([2, 5], [1.0, 0.5, 0.1])
    assert [float(piece(i)) for i in (0, 2, 3, 5, 6)] == [1.0, 1.0, 0.5, 0.5, pytest.approx(0.1)]
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [1.0])
    with pytest.raises(TypeError):
        optimizers.make_schedule([0.1, 0.2])


def test_clipping_packing_and_tree_checks():
    tree = {"a": jnp.array([3.0, 4.0]), "b": jnp.array(12.0)}
    assert float(optimizers.l2_norm(tree)) == 13.0
    clipped = optimizers.clip_grads(tree, 6.5)
    np.testing.assert_allclose(float(optimizers.l2_norm(clipped)), 6.5, rtol=1e-6)
    opt_init, opt_update, get_params = optimizers.adam(0.1)
    state = opt_init(tree)
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert morphax.tree.structure(packed) == morphax.tree.structure(state)
    np.testing.assert_array_equal(np.asarray(get_params(packed)["a"]), [3.0, 4.0])
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        opt_update(0, {"a": jnp.zeros(2)}, state)
    bad = optimizers.optimizer(lambda: ((lambda x: (x, x)), (lambda i, g, s: s[0]), (lambda s: s[0])))()
    with pytest.raises(TypeError, match="output structure"):
        bad.update_fn(0, jnp.ones(2), bad.init_fn(jnp.ones(2)))
    assert functools.reduce(lambda a, b: a and b, [callable(f) for f in bad])
