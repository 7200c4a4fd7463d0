"""experimental.ode.odeint: the JAX documentation's examples (a damped pendulum, Lotka-Volterra)
against SciPy's solve_ivp at tight tolerances, reverse-mode gradients against float64 finite
differences (check_grads), vmap against a Python loop, pytree states, and the compiled program:
under jit the whole solve is one native segment, the step loop a C loop (no host steps)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import morphax
import morphax.numpy as jnp
from morphax._src.compiler.backends import get_backend
from morphax._src.higher_order.host_eval import host_rules
from morphax._src.higher_order.while_loop import while_p
from morphax.experimental.ode import odeint
from morphax.test_util import check_grads


def pendulum(y, t, b, c):
    theta, omega = y[0], y[1]
    return jnp.stack([omega, -b * omega - c * jnp.sin(theta)])


def pendulum_np(t, y, b, c):
    return [y[1], -b * y[1] - c * np.sin(y[0])]


def lotka_volterra(state, t, alpha, beta, gamma, delta):
    prey, predator = state["prey"], state["predator"]
    return {
        "prey": alpha * prey - beta * prey * predator,
        "predator": delta * prey * predator - gamma * predator,
    }


def _reference(f, y0, ts, *args):
    out = solve_ivp(f, (ts[0], ts[-1]), y0, t_eval=ts, args=args, rtol=1e-13, atol=1e-13, method="DOP853")
    assert out.success
    return out.y.T


@pytest.fixture
def x64():
    with morphax.enable_x64():
        yield


def test_pendulum_matches_scipy(x64):
    y0 = np.array([np.pi - 0.1, 0.0])
    ts = np.linspace(0.0, 10.0, 101)
    got = odeint(pendulum, jnp.asarray(y0), jnp.asarray(ts), 0.25, 5.0, rtol=1e-10, atol=1e-10)
    assert got.shape == (101, 2) and got.dtype == jnp.float64
    np.testing.assert_allclose(got, _reference(pendulum_np, y0, ts, 0.25, 5.0), rtol=0, atol=1e-8)
    # JAX's default tolerances (1.4e-8) still track the solution closely.
    loose = odeint(pendulum, jnp.asarray(y0), jnp.asarray(ts), 0.25, 5.0)
    np.testing.assert_allclose(loose, _reference(pendulum_np, y0, ts, 0.25, 5.0), rtol=0, atol=5e-6)


def test_lotka_volterra_pytree_state_matches_scipy(x64):
    args = (1.1, 0.4, 0.4, 0.1)
    ts = np.linspace(0.0, 15.0, 31)
    state = {"prey": jnp.float64(10.0), "predator": jnp.float64(5.0)}
    got = odeint(lotka_volterra, state, jnp.asarray(ts), *args, rtol=1e-11, atol=1e-11)
    assert set(got) == {"prey", "predator"} and got["prey"].shape == (31,)

    def flat(t, y, a, b, c, d):
        return [a * y[0] - b * y[0] * y[1], d * y[0] * y[1] - c * y[1]]

    want = _reference(flat, [10.0, 5.0], ts, *args)
    np.testing.assert_allclose(got["prey"], want[:, 0], rtol=1e-8)
    np.testing.assert_allclose(got["predator"], want[:, 1], rtol=1e-8)


def test_float32_and_outputs_at_given_times():
    # float32 state: the solution at the requested (uneven) times, to float32 accuracy.
    ts = np.array([0.0, 0.05, 0.3, 1.7, 2.0], np.float32)
    got = odeint(lambda y, t, k: -k * y, jnp.ones(3, jnp.float32), jnp.asarray(ts), jnp.float32(0.7))
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(got, np.exp(-0.7 * ts)[:, None] * np.ones(3), rtol=2e-6)


def test_gradients_match_finite_differences(x64):
    ts = jnp.linspace(0.0, 3.0, 7)
    y0 = jnp.array([1.2, -0.3])

    def loss(y0, b, c):
        return jnp.sum(odeint(pendulum, y0, ts, b, c, rtol=1e-10, atol=1e-10) ** 2)

    check_grads(loss, (y0, 0.25, 5.0), order=1, modes=["rev"], atol=1e-5, rtol=1e-5)

    # With respect to the output times, and to values the derivative closes over.
    def at_times(ts, scale):
        return odeint(lambda y, t: -scale * y * jnp.cos(t), jnp.ones(2), ts, rtol=1e-10, atol=1e-10)[1:].sum()

    check_grads(at_times, (jnp.array([0.0, 0.4, 1.1]), 0.8), order=1, modes=["rev"], atol=1e-5, rtol=1e-5)


def test_vmap_matches_a_python_loop(x64):
    ts = jnp.linspace(0.0, 2.0, 5)
    starts = jnp.array([[0.5, 0.0], [1.0, 0.2], [2.0, -1.0]])
    damping = jnp.array([0.1, 0.3, 0.5])
    batched = morphax.vmap(lambda y, b: odeint(pendulum, y, ts, b, 5.0))(starts, damping)
    for k in range(3):
        np.testing.assert_allclose(
            batched[k], odeint(pendulum, starts[k], ts, damping[k], 5.0), rtol=1e-7, atol=1e-9
        )


@pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")
def test_jit_is_one_native_program(monkeypatch):
    python_loops = []
    real = host_rules[while_p]
    monkeypatch.setitem(host_rules, while_p, lambda args, **p: python_loops.append(1) or real(args, **p))
    ts = jnp.linspace(0.0, 5.0, 11)
    solve = morphax.jit(lambda y0, b: odeint(pendulum, y0, ts, b, 5.0), backend="c")
    compiled = solve.lower(jnp.array([1.0, 0.0]), 0.25).compile()
    assert compiled.num_segments == 1
    assert "    while (*(const uint8_t *)" in compiled.as_text()
    out = solve(jnp.array([1.0, 0.0]), 0.25)
    np.testing.assert_allclose(out, _reference(pendulum_np, [1.0, 0.0], np.asarray(ts), 0.25, 5.0), atol=2e-5)
    grad = morphax.jit(morphax.grad(lambda b: solve(jnp.array([1.0, 0.0]), b)[-1, 0]), backend="c")
    assert grad.lower(0.25).compile().num_segments == 1
    grad(0.25)
    assert python_loops == []


def test_repeated_calls_reuse_the_compiled_solver():
    traces = []

    def decay(y, t):
        traces.append(1)
        return -y

    ts = jnp.linspace(0.0, 1.0, 3)
    for _ in range(3):
        odeint(decay, jnp.ones(2), ts)
    first = len(traces)
    odeint(decay, jnp.ones(2), ts)
    assert len(traces) == first  # no retrace of the user's function once cached


def test_bad_arguments():
    ts = jnp.linspace(0.0, 1.0, 3)
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(lambda y, t: -y, jnp.ones(2), jnp.arange(3))
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(lambda y, t, s: -y, jnp.ones(2), ts, "fast")
