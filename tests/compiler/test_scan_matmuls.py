"""Matmuls moved out of scans (compiler/scan_matmuls.py): the rewritten programs compute what a
Python loop over the steps computes (float64, NumPy), on both backends, and the rewrite happens
only where it is valid (a carry used for anything else, a loop constant on both sides, nested
loops stay as they are)."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler import compile as compile_mod
from morphax._src.compiler.scan_matmuls import hoist_scan_matmuls
from morphax._src.higher_order.scan import scan_p
from morphax._src.prims.dot import dot_general_p

RNG = np.random.default_rng(29)


def _scans(closed):
    return [e for e in closed.jaxpr.eqns if e.primitive is scan_p]


def _dots_in_bodies(closed) -> int:
    return sum(e.primitive is dot_general_p for s in _scans(closed) for e in s.params["jaxpr"].jaxpr.eqns)


def _rnn_loss(params, xs):
    w_h, w_x, b = params

    def cell(h, x):
        h = jnp.tanh(h @ w_h + x @ w_x + b)
        return h, jnp.sum(h)

    h, ys = lax.scan(cell, jnp.zeros((xs.shape[1], w_h.shape[0]), xs.dtype), xs)
    return jnp.mean(h**2) + 1e-3 * jnp.mean(ys)


def _rnn_data(steps=7, batch=3, hidden=5, features=4, dtype=np.float64):
    params = (
        (RNG.standard_normal((hidden, hidden)) * 0.4).astype(dtype),
        (RNG.standard_normal((features, hidden)) * 0.4).astype(dtype),
        RNG.standard_normal(hidden).astype(dtype),
    )
    return params, RNG.standard_normal((steps, batch, features)).astype(dtype)


def _loop_reference(params, xs):
    """The loss and its gradient by a Python loop over the steps (float64 NumPy, backprop by hand)."""
    w_h, w_x, b = params
    hs = [np.zeros((xs.shape[1], w_h.shape[0]))]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ w_h + x @ w_x + b))
    t, n = len(xs), hs[-1].size
    loss = np.mean(hs[-1] ** 2) + 1e-3 * np.mean([h.sum() for h in hs[1:]])
    dh = 2 * hs[-1] / n
    g_h, g_x, g_b = np.zeros_like(w_h), np.zeros_like(w_x), np.zeros_like(b)
    for step in reversed(range(t)):
        dz = (dh + 1e-3 / t) * (1 - hs[step + 1] ** 2)
        g_h += hs[step].T @ dz
        g_x += xs[step].T @ dz
        g_b += dz.sum(0)
        dh = dz @ w_h.T
    return loss, (g_h, g_x, g_b)


def test_the_rnn_training_step_loses_its_per_step_weight_gradient_matmuls():
    params, xs = _rnn_data()
    with morphax.enable_x64(True):
        closed = morphax.make_jaxpr(morphax.value_and_grad(_rnn_loss))(params, xs)
        optimized = compile_mod._optimize(closed)
    # Before: x @ W_x and h @ W_h forward, three matmuls backward. After: h @ W_h each way.
    assert _dots_in_bodies(compile_mod.pipeline.optimize(closed)) == 5
    assert _dots_in_bodies(optimized) == 2
    assert sum(e.primitive is dot_general_p for e in optimized.jaxpr.eqns) == 3  # xs @ W_x, H.T @ G, X.T @ G


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_rewritten_rnn_gradients_match_a_python_loop(backend):
    params, xs = _rnn_data()
    with morphax.enable_x64(True):
        loss, grads = morphax.jit(morphax.value_and_grad(_rnn_loss), backend=backend)(params, xs)
    want_loss, want_grads = _loop_reference(params, xs)
    np.testing.assert_allclose(float(loss), want_loss, rtol=1e-12)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


def test_scanned_operand_on_the_right_and_transposed_accumulators():
    """W @ x_t (the scanned operand second: the hoisted product is transposed back) and an
    accumulator written as g.T @ x on the left of the add."""
    w = RNG.standard_normal((3, 4))
    xs = RNG.standard_normal((6, 4, 2))

    def f(w, xs):
        def body(acc, x):
            y = jnp.tanh(w @ x)  # (3, 2)
            return (y @ x.T).T + acc, y.sum()

        return lax.scan(body, jnp.zeros((4, 3)), xs)

    with morphax.enable_x64(True):
        closed = morphax.make_jaxpr(f)(w, xs)
        assert _dots_in_bodies(hoist_scan_matmuls(compile_mod.pipeline.optimize(closed))) == 0
        acc, ys = morphax.jit(f)(w, xs)
    ys_want = [np.tanh(w @ x).sum() for x in xs]
    acc_want = sum((np.tanh(w @ x) @ x.T).T for x in xs)
    np.testing.assert_allclose(np.asarray(acc), acc_want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ys), ys_want, rtol=1e-12)


def test_a_carry_read_elsewhere_or_a_product_of_constants_stays_in_the_loop():
    w = RNG.standard_normal((3, 3))
    xs = RNG.standard_normal((5, 3))

    def f(w, xs):
        def body(acc, x):
            prod = jnp.outer(x, x) @ w
            return acc + prod, jnp.sum(acc)  # the accumulator is also read: it must stay a carry

        return lax.scan(body, jnp.eye(3), xs)

    def g(w, xs):
        def body(acc, x):
            return acc + w @ w, x.sum()  # loop constants on both sides: no step axis to contract

        return lax.scan(body, jnp.zeros((3, 3)), xs)

    with morphax.enable_x64(True):
        for fn in (f, g):
            closed = compile_mod.pipeline.optimize(morphax.make_jaxpr(fn)(w, xs))
            assert hoist_scan_matmuls(closed) is closed
        acc, sums = morphax.jit(f)(w, xs)
    want_acc, want_sums = np.eye(3), []
    for x in xs:
        want_sums.append(want_acc.sum())
        want_acc = want_acc + np.outer(x, x) @ w
    np.testing.assert_allclose(np.asarray(acc), want_acc, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(sums), want_sums, rtol=1e-12)


def test_vmapped_and_reverse_scans_match_a_loop():
    w = RNG.standard_normal((4, 3))
    xs = RNG.standard_normal((2, 5, 6, 4))  # (batch, steps, rows, features)

    def f(xs):
        def body(acc, x):
            h = jnp.sin(x @ w)
            return acc + h.T @ x, None

        return lax.scan(body, jnp.zeros((3, 4)), xs, reverse=True)[0]

    with morphax.enable_x64(True):
        got = morphax.jit(morphax.vmap(f))(xs)
    for b in range(2):
        want = sum(np.sin(x @ w).T @ x for x in xs[b])
        np.testing.assert_allclose(np.asarray(got[b]), want, rtol=1e-12)
