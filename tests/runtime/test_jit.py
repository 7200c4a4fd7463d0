"""jit: caching (asserted with counters), composition with every transformation, asynchronous
dispatch observed honestly, thread safety, donation, and every primitive jitted vs eager."""

from __future__ import annotations

import threading
import zlib

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.api.jit import trace_counters
from morphax._src.compiler.compile import counters as compile_counters
from morphax._src.core.primitive import registry
from morphax._src.runtime.buffers import PendingBuffer


def test_cache_counters():
    def f(x, y):
        return jnp.sin(x) * y

    jf = morphax.jit(f)
    t0, c0 = trace_counters.traces, compile_counters.compiles
    jf(jnp.ones(4), jnp.ones(4))
    assert (trace_counters.traces - t0, compile_counters.compiles - c0) == (1, 1)
    jf(jnp.zeros(4), jnp.arange(4.0))  # new values, same shapes: nothing new
    assert (trace_counters.traces - t0, compile_counters.compiles - c0) == (1, 1)
    jf(jnp.ones(5), jnp.ones(5))  # a new shape retraces once
    assert trace_counters.traces - t0 == 2
    jf(jnp.ones(5), 2.0)
    jf(jnp.ones(5), 3.0)  # weakly typed Python scalars do not retrace per value
    assert trace_counters.traces - t0 == 3

    g = morphax.jit(lambda x, n: x * n, static_argnums=1)
    t1 = trace_counters.traces
    g(jnp.ones(2), 2)
    g(jnp.ones(2), 2)
    g(jnp.ones(2), 3)  # a static argument retraces for each new value
    assert trace_counters.traces - t1 == 2


def test_unhashable_static_argument_error():
    g = morphax.jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        g(jnp.ones(2), [1, 2])


def test_function_going_away_frees_its_cache_entries():
    import gc

    from morphax._src.api import jit as jit_api

    def make():
        def f(x):
            return x + 1

        return f

    f = make()
    morphax.jit(f)(jnp.ones(2))
    assert f in jit_api._caches
    n = len(jit_api._caches)
    del f
    gc.collect()
    assert len(jit_api._caches) == n - 1


def test_compositions_match_eager():
    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    w = jnp.asarray(np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32))
    xs = jnp.asarray(np.random.default_rng(1).standard_normal((5, 4, 3)).astype(np.float32))
    eager = morphax.vmap(morphax.grad(loss), in_axes=(None, 0))(w, xs)
    a = morphax.jit(morphax.vmap(morphax.grad(loss), in_axes=(None, 0)))(w, xs)
    b = morphax.vmap(morphax.jit(morphax.grad(loss)), in_axes=(None, 0))(w, xs)
    c = morphax.jit(morphax.vmap(morphax.grad(morphax.jit(loss)), in_axes=(None, 0)))(w, xs)
    for r in (a, b, c):
        np.testing.assert_allclose(np.asarray(r), np.asarray(eager), rtol=1e-5, atol=1e-6)


def test_asynchronous_dispatch_is_observable():
    f = morphax.jit(lambda x: jnp.sum(jnp.sin(x) ** 2 + jnp.cos(x) * x))
    x = jnp.asarray(np.linspace(0, 1, 2_000_000, dtype=np.float32))
    f(x).block_until_ready()  # compile first
    out = f(x)
    # The call returned before its work finished: the result is a pending buffer.
    assert isinstance(out._buf, PendingBuffer) and not out.is_ready()
    xn = np.asarray(x, np.float64)
    np.testing.assert_allclose(float(out), np.sum(np.sin(xn) ** 2 + np.cos(xn) * xn), rtol=1e-3)
    assert out.is_ready()


def test_error_inside_work_surfaces_at_the_wait():
    from morphax._src.runtime import dispatch

    class Boom(Exception):
        pass

    class BadExecutable:
        in_avals = []
        out_avals = [morphax._src.core.avals.ShapedArray((1_000_000,), np.float32)]
        out_weak_types = [False]
        total_elements = 1_000_000
        work = float("inf")
        calls_host = False

        def __call__(self):
            raise Boom("raised inside the queued work")

    (out,) = dispatch.execute(BadExecutable(), [], [False])
    with pytest.raises(Boom, match="inside the queued work"):
        out.block_until_ready()


def test_many_threads_call_one_jitted_function():
    f = morphax.jit(lambda x, k: jnp.sum(x * k))
    results, errors = {}, []

    def worker(k):
        try:
            for _ in range(20):
                results[k] = float(f(jnp.arange(1000.0), float(k)))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {k: float(np.sum(np.arange(1000.0) * k)) for k in range(8)}


def test_donated_array_is_deleted():
    f = morphax.jit(lambda x: x * 2, donate_argnums=0)
    x = jnp.ones(3)
    y = f(x)
    np.testing.assert_array_equal(y, [2, 2, 2])
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        np.asarray(x)


def test_lower_shows_jaxpr_and_generated_code():
    text = morphax.jit(lambda x: jnp.sin(x) + 1).lower(jnp.ones(3)).as_text()
    assert "sin a" in text and "def " in text


def test_eval_shape_and_disable_jit():
    out = morphax.eval_shape(lambda x: x.sum(0), morphax.ShapeDtypeStruct((3, 4), jnp.float32))
    assert out.shape == (4,) and out.dtype == np.float32
    seen = []

    @morphax.jit
    def f(x):
        seen.append(type(x).__name__)
        return x + 1

    with morphax.disable_jit():
        f(jnp.ones(2))
    assert seen == ["Array"]


def _jit_cases():
    out = []
    for name in sorted(registry):
        prim = registry[name]
        if prim.test_spec is None or prim.higher_order:
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        cases = [c for c in prim.test_spec.cases(rng)][:3]
        for case in cases:
            out.append(pytest.param(prim, case, id=f"{name}-{case.name}"))
    return out


@pytest.mark.parametrize("prim,case", _jit_cases())
def test_every_primitive_jitted_matches_eager(prim, case):
    # The NumPy backend runs each primitive's reference: jit equals eager bit for bit. The native
    # backend's kernels are checked against the reference in tests/compiler.
    f = lambda *a: prim.bind(*a, **case.params)
    eager = f(*case.args)
    jitted = morphax.jit(f, backend="numpy")(*case.args)
    eager = eager if prim.multiple_results else [eager]
    jitted = jitted if prim.multiple_results else [jitted]
    for e, j in zip(eager, jitted):
        assert np.asarray(j).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(
            np.asarray(j).astype(np.float64) if np.asarray(j).dtype.kind == "V" else np.asarray(j),
            np.asarray(e).astype(np.float64) if np.asarray(e).dtype.kind == "V" else np.asarray(e),
        )


def test_seed_examples_under_jit_match_eager():
    from morphax import random

    key = random.PRNGKey(0)
    mat = random.normal(key, (150, 100))
    batched_x = random.normal(key, (10, 100))
    mv = morphax.vmap(lambda m, v: jnp.dot(m, v), (None, 0))
    np.testing.assert_allclose(morphax.jit(mv)(mat, batched_x), mv(mat, batched_x), rtol=1e-5, atol=1e-5)
    inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.39], [0.74, -2.49, 1.39]])
    targets = jnp.array([True, True, False, True])

    def loss(W, b):
        preds = morphax.nn.sigmoid(jnp.dot(inputs, W) + b)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    W, b = random.normal(key, (3,)), jnp.float32(0.3)
    eager = morphax.grad(loss, argnums=(0, 1))(W, b)
    jitted = morphax.jit(morphax.grad(loss, argnums=(0, 1)))(W, b)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-5, atol=1e-6)
    # The random samplers themselves give the same bits under jit.
    np.testing.assert_array_equal(
        morphax.jit(lambda k: random.normal(k, (5,)))(key), random.normal(key, (5,))
    )


def test_jit_closing_over_an_outer_tracer():
    # jit inside grad/vmap closing over the outer transformation's value (closure conversion).
    assert float(morphax.grad(lambda w: morphax.jit(lambda x: x * w)(1.0))(3.0)) == 1.0
    out = morphax.vmap(lambda w: morphax.jit(lambda x: jnp.sin(x * w))(2.0))(jnp.arange(3.0))
    np.testing.assert_allclose(out, np.sin(2.0 * np.arange(3.0)), rtol=1e-6)


def test_exception_inside_a_callback_surfaces_at_the_call():
    def bad(x):
        raise ArithmeticError("raised in the host callback")

    @morphax.jit
    def f(x):
        morphax.debug.callback(bad, x)
        return x * 2

    # As in JAX: a program with host callbacks runs at the call, which raises the error (a
    # JaxRuntimeError whose message ends with the callback's exception).
    with pytest.raises(morphax.errors.JaxRuntimeError, match="ArithmeticError: raised in the host callback"):
        f(jnp.ones(3))


def test_operandless_primitive_with_params_compiles():
    # iota has no operands but has params; constant folding leaves large ones alone.
    f = morphax.jit(lambda x: x + morphax.lax.iota(np.int32, 200_000))
    np.testing.assert_array_equal(np.asarray(f(jnp.int32(1)))[:3], [1, 2, 3])


def test_small_work_on_many_elements_runs_inline():
    # 200,000 elements but one cheap pass over them: a thread handoff would cost more than the
    # work, so the call runs on the calling thread and returns ready outputs.
    from morphax._src.compiler.backends import get_backend
    from morphax._src.runtime import dispatch

    if not get_backend("c").available():
        pytest.skip("no C compiler: the numpy backend does not fuse, so the work is larger")
    f = morphax.jit(lambda x: x * 2.0 + 1.0, backend="c")
    x = jnp.ones(100_000, dtype=np.float32)
    f(x).block_until_ready()
    exe = f.lower(x).compile()._executable
    assert exe.total_elements >= dispatch.INLINE_ELEMENTS and exe.work < dispatch.INLINE_WORK
    out = f(x)
    assert type(out._buf) is np.ndarray
    np.testing.assert_array_equal(np.asarray(out), np.full(100_000, 3.0, np.float32))
    # A loop's work is unknown (its trip count): such programs inline only when tiny.
    g = morphax.jit(lambda x: morphax.lax.fori_loop(0, 3, lambda i, c: c * 2.0, x), backend="c")
    assert g.lower(x).compile()._executable.work == float("inf")
