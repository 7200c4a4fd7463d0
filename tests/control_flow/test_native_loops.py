"""Control flow as native code inside a jitted program's segment (compiler/segments.py `Loop`,
backends/c/program.py): scan, while_loop/fori_loop and cond/switch whose bodies compile to one
segment each run as C loops and branches, under jit, grad and vmap, with the forms autodiff and
vmap produce (reverse scans, stacked residuals, batched predicates). Every case is compared with
the numpy backend (a Python loop over NumPy) and asserts the program is one native segment."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import blas

pytestmark = pytest.mark.skipif(
    not get_backend("c").available() or not blas.available(), reason="no C compiler or no BLAS"
)
RNG = np.random.default_rng(5)


def _check(f, *args, segments=1, rtol=2e-5, atol=2e-5):
    """f under jit on both backends: equal results, and `segments` native segments in C."""
    got = morphax.jit(f, backend="c")(*args)
    want = morphax.jit(f, backend="numpy")(*args)
    got_leaves = morphax.tree_util.tree_leaves(got)
    want_leaves = morphax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    assert morphax.jit(f, backend="c").lower(*args).compile().num_segments == segments
    return got


def _rnn_loss(params, xs, h0):
    w_h, w_x, b = params

    def cell(h, x):
        h = jnp.tanh(h @ w_h + x @ w_x + b)
        return h, jnp.sum(h * h)

    h, ys = lax.scan(cell, h0, xs)
    return jnp.mean(h**2) + 1e-2 * jnp.mean(ys)


def _rnn_args(t=6, batch=3, hidden=5, features=4):
    params = (
        RNG.standard_normal((hidden, hidden)).astype(np.float32) * 0.4,
        RNG.standard_normal((features, hidden)).astype(np.float32) * 0.4,
        RNG.standard_normal(hidden).astype(np.float32) * 0.1,
    )
    xs = RNG.standard_normal((t, batch, features)).astype(np.float32)
    return params, xs, np.zeros((batch, hidden), np.float32)


def test_rnn_training_step_is_one_segment():
    # value_and_grad: a forward scan stacking residuals and a reverse scan over them.
    params, xs, h0 = _rnn_args()
    value, grads = _check(morphax.value_and_grad(_rnn_loss), params, xs, h0)
    # float64 finite differences of the loss, on the C backend.
    eps = 1e-3
    w_h = params[0].astype(np.float64)
    d = np.zeros_like(w_h)
    d[1, 2] = eps
    plus = _rnn_loss((np.float32(w_h + d), *params[1:]), xs, h0)
    minus = _rnn_loss((np.float32(w_h - d), *params[1:]), xs, h0)
    np.testing.assert_allclose(float(grads[0][1, 2]), (float(plus) - float(minus)) / (2 * eps), rtol=2e-2)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_with_consts_xs_and_stacked_outputs(reverse):
    def f(c, xs, init):
        def body(carry, x):
            a, n = carry
            y = jnp.sin(a * x) + c
            return (a + y, n + 1), (y, y * 2.0)

        return lax.scan(body, (init, 0), xs, reverse=reverse)

    xs = RNG.standard_normal((7, 3)).astype(np.float32)
    _check(f, np.float32(0.5), xs, np.ones(3, np.float32))


def test_scan_passthrough_literal_and_duplicate_outputs():
    def f(xs, init):
        def body(carry, x):
            a, b = carry
            # `b` passes through unchanged; ys: the slice itself, a literal, one value twice.
            s = a + x
            return (s, b), (x, 0.0, s, s)

        return lax.scan(body, (init, init * 2.0), xs)

    xs = RNG.standard_normal((4, 2)).astype(np.float32)
    _check(f, xs, np.ones(2, np.float32))


def test_zero_length_scan_returns_the_initial_carry():
    def f(xs, init):
        return lax.scan(lambda c, x: (c + x, c * x), init, xs)

    _check(f, np.zeros((0, 3), np.float32), np.arange(3, dtype=np.float32))


def test_nested_scans_and_a_scan_inside_vmap():
    def inner(c, x):
        return lax.scan(lambda a, y: (a * 0.5 + y, a), c, x)

    def f(xs, init):
        return lax.scan(lambda c, x: inner(c, x), init, xs)

    xs = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    _check(f, xs, np.ones(2, np.float32))
    _check(
        morphax.vmap(f, in_axes=(0, None)),
        RNG.standard_normal((5, 3, 4, 2)).astype(np.float32),
        np.ones(2, np.float32),
    )


def test_grad_of_a_while_loop_free_fori_loop():
    # fori_loop with static bounds is a scan: differentiable, reverse-mode included.
    def f(x):
        return jnp.sum(lax.fori_loop(0, 8, lambda i, c: jnp.sin(c) * 1.1 + c * 0.3, x))

    x = RNG.standard_normal(6).astype(np.float32)
    _check(morphax.grad(f), x)
    _check(morphax.jit(morphax.hessian(f)), x)


def test_while_loop_with_literal_operands_and_vmapped_predicate():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 1.7 + 0.3, c[1] + 1), (x, 0))

    _check(f, np.float32(0.1))
    # vmap: the predicate becomes "any lane still running", the step a select_n per lane.
    _check(morphax.vmap(f), np.linspace(0.1, 9.0, 6, dtype=np.float32))


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_clamps_its_index_and_passes_operands_through(index):
    branches = [
        lambda x, y: (x + y, y),
        lambda x, y: (x * y, x),  # an operand passed through
        lambda x, y: (jnp.tanh(x) @ jnp.ones((3, 3), np.float32), 2.0 * y),
    ]

    def f(i, x, y):
        return lax.switch(i, branches, x, y)

    x = RNG.standard_normal((2, 3)).astype(np.float32)
    y = RNG.standard_normal((2, 3)).astype(np.float32)
    _check(f, np.int32(index), x, y)


def test_cond_under_vmap_and_grad():
    def f(p, x):
        return lax.cond(p > 0, lambda v: jnp.sin(v) * 2.0, lambda v: jnp.cos(v) - 1.0, x)

    ps = np.array([-1.0, 2.0, 0.5, -0.1], np.float32)
    xs = RNG.standard_normal(4).astype(np.float32)
    _check(morphax.vmap(f), ps, xs)
    _check(morphax.grad(lambda p, x: jnp.sum(f(p, x)), argnums=1), np.float32(1.0), xs)


def test_loop_with_a_python_step_in_its_body_stays_outside_segments():
    # A sort inside the body is not native: the scan runs as a Python step, still correct.
    def f(xs, init):
        return lax.scan(lambda c, x: (jnp.sort(c + x), jnp.sum(c)), init, xs)

    xs = RNG.standard_normal((3, 4)).astype(np.float32)
    _check(f, xs, np.zeros(4, np.float32), segments=0)
