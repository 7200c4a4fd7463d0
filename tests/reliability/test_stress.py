"""Eight threads at once: compiles racing on shared and private jitted functions, grad, vmap,
scan, while_loop, random and callbacks, each result checked against NumPy. No mismatch, no
exception, no deadlock (a barrier with a timeout turns a stall into a failure)."""

import threading

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax

THREADS = 8
ROUNDS = 10
TIMEOUT = 120.0

_shared = morphax.jit(lambda x, s: jnp.sin(x) * s + jnp.sum(x))


def _work(tid, errors, barrier):
    try:
        rng = np.random.default_rng(tid)
        barrier.wait(TIMEOUT)  # start together, so the first traces and compiles race
        for r in range(ROUNDS):
            n = 3 + (tid + r) % 4  # shapes shared between threads: the same cache entries race
            x_np = rng.normal(size=n).astype(np.float32)
            x = jnp.asarray(x_np)

            got = np.asarray(_shared(x, 2.0))
            np.testing.assert_allclose(got, np.sin(x_np) * 2 + x_np.sum(), rtol=2e-5, atol=2e-5)

            private = morphax.jit(lambda v, k=tid, r=r: v * k + r)  # a fresh function: a new compile
            np.testing.assert_allclose(np.asarray(private(x)), x_np * tid + r, rtol=1e-6)

            g = morphax.jit(morphax.grad(lambda v: jnp.sum(jnp.tanh(v) ** 2)))
            t = np.tanh(x_np)
            np.testing.assert_allclose(np.asarray(g(x)), 2 * t * (1 - t**2), rtol=1e-4, atol=1e-6)

            xs = jnp.asarray(rng.normal(size=(4, n)).astype(np.float32))
            per_row = morphax.vmap(lambda row: jnp.dot(row, row))(xs)
            np.testing.assert_allclose(np.asarray(per_row), (np.asarray(xs) ** 2).sum(1), rtol=1e-5)

            cums = lax.scan(lambda c, v: (c + v, c + v), jnp.zeros(n), xs)[1]
            np.testing.assert_allclose(np.asarray(cums), np.cumsum(np.asarray(xs), 0), rtol=1e-5, atol=1e-5)

            steps = morphax.jit(
                lambda k: lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 2), (0, 1.0))
            )
            assert float(steps(tid + 2)[1]) == 2.0 ** (tid + 2)

            key = morphax.random.fold_in(morphax.random.PRNGKey(0), tid * 100 + r)
            a = np.asarray(morphax.jit(lambda k: morphax.random.uniform(k, (16,)))(key))
            b = np.asarray(morphax.random.uniform(key, (16,)))
            np.testing.assert_array_equal(a, b)

            seen = []
            record = seen.append
            morphax.jit(lambda v, rec=record: (morphax.debug.callback(lambda u: rec(float(u[0])), v), v)[1])(
                x
            )
            assert seen == [float(x_np[0])]
    except BaseException as e:  # noqa: BLE001 - reported by the main thread
        errors.append((tid, e))


def test_eight_threads_racing_compiles():
    errors = []
    barrier = threading.Barrier(THREADS)
    threads = [threading.Thread(target=_work, args=(i, errors, barrier)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"
    assert not errors, errors[:3]


def test_x64_scopes_in_threads_do_not_leak_into_each_other():
    # Each thread computes under its own x64 setting at the same time.
    errors = []
    barrier = threading.Barrier(4)

    def run(enable):
        try:
            with morphax.enable_x64(enable):
                barrier.wait(TIMEOUT)
                for _ in range(20):
                    dtype = jnp.asarray(1.5).dtype
                    want = np.float64 if enable else np.float32
                    assert dtype == want, (enable, dtype)
                    assert morphax.jit(lambda v: v * 2)(jnp.ones(3)).dtype == want
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i % 2 == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not errors, errors[:2]
