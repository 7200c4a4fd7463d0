"""while_loop as native code. Inside a jitted program, a loop whose predicate and step (body, then
the predicate on its result) each compile to one native segment is a C loop inside the program's
segment (compiler/segments.py, backends/c/program.py); run eagerly, the loop is compiled as a
program of its own, so it runs the same C. Compared with a Python loop of the same arithmetic in
NumPy, and with the numpy backend's Python loop; loops whose step leaves native code keep the
Python loop (the primitive's host rule)."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import default_backend_name, get_backend
from morphax._src.higher_order.host_eval import host_rules
from morphax._src.higher_order.while_loop import while_p

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")


@pytest.fixture
def python_loops(monkeypatch):
    """The while loops that ran as Python loops (the host rule), by their number of carries."""
    calls = []
    real = host_rules[while_p]

    def counting(args, **params):
        calls.append(len(params["body_jaxpr"].out_avals))
        return real(args, **params)

    monkeypatch.setitem(host_rules, while_p, counting)
    return calls


def _native_in_program(f, *args) -> bool:
    """Whether jit(f) is one native segment holding the loop as C (a fori_loop with static
    bounds is a scan: a counted C loop)."""
    compiled = morphax.jit(f, backend="c").lower(*args).compile()
    text = compiled.as_text()
    loop = "    while (*(const uint8_t *)" in text or "    for (int64_t t = 0; t < " in text
    return compiled.num_segments == 1 and loop


def test_scalar_newton_iteration(python_loops):
    def newton(a):
        def body(c):
            y, i = c
            return y - (y * y - a) / (2 * y), i + 1

        return lax.while_loop(lambda c: c[1] < 1000, body, (a, 0))

    y, i = morphax.jit(newton, backend="c")(np.float32(2.0))
    want = np.float32(2.0)
    for _ in range(1000):
        want = want - (want * want - np.float32(2.0)) / (np.float32(2) * want)
    assert int(i) == 1000 and float(y) == float(want)
    assert _native_in_program(newton, np.float32(2.0)) and python_loops == []
    # Run eagerly (on the default backend), the same loop runs natively too.
    y, i = newton(np.float32(2.0))
    assert int(i) == 1000 and float(y) == float(want)
    # (On a device platform, an eager loop is one XLA program: no Python loop either.)
    native = default_backend_name() == "c" or morphax.default_backend() != "cpu"
    assert python_loops == ([] if native else [2])


@pytest.mark.parametrize("start", [0.0, 1.0, 50.0])
def test_array_carry_with_a_data_dependent_exit(python_loops, start):
    # One array carry: the body, the sum and the comparison fuse into one kernel.
    def f(x, k):
        return lax.while_loop(lambda c: jnp.sum(c) < 100.0, lambda c: c * k + 1.0, x)

    x = np.arange(4, dtype=np.float32) + np.float32(start)
    got = morphax.jit(f, backend="c")(x, np.float32(1.5))
    want = x.copy()
    while want.sum() < 100:
        want = want * np.float32(1.5) + np.float32(1)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(
        np.asarray(got), np.asarray(morphax.jit(f, backend="numpy")(x, np.float32(1.5)))
    )
    assert _native_in_program(f, x, np.float32(1.5))
    # Eagerly (a loop whose first predicate is false runs no step): natively on the C backend.
    python_loops.clear()  # the numpy backend's reference run above was a Python loop
    np.testing.assert_array_equal(np.asarray(f(x, np.float32(1.5))), want)
    native = default_backend_name() == "c" or morphax.default_backend() != "cpu"  # (device: one XLA program)
    assert python_loops == ([] if native else [1])


def test_carries_of_two_shapes_run_natively(python_loops):
    # The (4,) carry and the scalar counter are two kernels (two loop domains) in one segment.
    def f(x):
        return lax.while_loop(lambda c: jnp.sum(c[0]) < 100.0, lambda c: (c[0] * 1.5 + 1.0, c[1] + 1), (x, 0))

    got, n = morphax.jit(f, backend="c")(np.arange(4, dtype=np.float32))
    want, count = np.arange(4, dtype=np.float32), 0
    while want.sum() < 100:
        want, count = want * np.float32(1.5) + np.float32(1), count + 1
    np.testing.assert_array_equal(np.asarray(got), want)
    assert int(n) == count and _native_in_program(f, np.arange(4, dtype=np.float32))


def test_power_iteration_with_a_matmul_runs_natively(python_loops):
    # Each step: a BLAS matrix-vector product, a norm (a reduction) and a division, in one segment.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16))
    a = (a + a.T).astype(np.float32)

    def f(a, v):
        def body(c):
            v, i = c
            w = a @ v
            return w / jnp.sqrt(jnp.sum(w * w)), i + 1

        return lax.while_loop(lambda c: c[1] < 50, body, (v, 0))

    v0 = np.ones(16, np.float32)
    got, n = morphax.jit(f, backend="c")(a, v0)
    want, _ = morphax.jit(f, backend="numpy")(a, v0)
    ref = v0
    for _ in range(50):
        w = a @ ref
        ref = w / np.sqrt(np.sum(w * w))
    assert int(n) == 50 and _native_in_program(f, a, v0)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_integer_carries_and_a_carry_the_step_does_not_read(python_loops):
    def collatz_steps(n):
        def body(c):
            v, steps, last = c
            v = jnp.where(v % 2 == 0, v // 2, 3 * v + 1)
            return v, steps + 1, steps  # `last` is overwritten, never read

        return lax.while_loop(lambda c: c[0] != 1, body, (n, 0, -1))

    for n in (1, 6, 27, 97):
        v, steps, last = morphax.jit(collatz_steps, backend="c")(np.int32(n))
        want, count = n, 0
        while want != 1:
            want, count = (want // 2 if want % 2 == 0 else 3 * want + 1), count + 1
        assert (int(v), int(steps), int(last)) == (1, count, count - 1 if count else -1)
    assert _native_in_program(collatz_steps, np.int32(6))


def test_fori_loop_under_vmap_runs_natively_and_matches_numpy(python_loops):
    def f(x):
        return lax.fori_loop(0, 25, lambda i, c: c * 0.9 + jnp.sin(c) * 0.1, x)

    xs = np.linspace(-2, 2, 7, dtype=np.float32)
    got = morphax.jit(morphax.vmap(f), backend="c")(xs)
    want = morphax.jit(morphax.vmap(f), backend="numpy")(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert _native_in_program(morphax.vmap(f), xs)


def test_a_step_with_a_callback_keeps_the_python_loop(python_loops):
    seen = []

    def f(x):
        def body(c):
            morphax.debug.callback(lambda v: seen.append(float(v)), c[0])
            return c[0] + 1.0, c[1] + 1

        return lax.while_loop(lambda c: c[1] < 3, body, (x, 0))

    out, n = morphax.jit(f, backend="c")(np.float32(0.0))
    assert float(out) == 3.0 and int(n) == 3
    assert seen == [0.0, 1.0, 2.0]
    assert python_loops == [2] and not _native_in_program(f, np.float32(0.0))
