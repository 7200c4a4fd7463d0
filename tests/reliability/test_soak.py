"""Long runs keep memory flat: 2,000 jitted training steps (and eager grad steps) with the
process's resident memory read before and after. Marked slow (deselect with -m "not slow" in the
quick loop); CI runs it."""

import gc
import os

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax

pytestmark = pytest.mark.slow


def _rss_mb():
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except OSError:
        pytest.skip("resident memory is read from /proc/self/statm (Linux only)")
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _init(key, sizes):
    params = []
    for k, (m, n) in zip(morphax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        params.append((morphax.random.normal(k, (m, n)) * 0.1, jnp.zeros(n)))
    return params


def _loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return -jnp.mean(jnp.sum(morphax.nn.log_softmax(logits) * y, axis=-1))


@morphax.jit
def _step(params, x, y):
    loss, grads = morphax.value_and_grad(_loss)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


def _data(seed, n=64):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 32)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int32)
    return jnp.asarray(x), jnp.asarray(np.eye(10, dtype=np.float32)[labels])


def test_2000_jitted_training_steps_keep_memory_flat():
    params = _init(morphax.random.PRNGKey(0), [32, 64, 64, 10])
    batches = [_data(i) for i in range(8)]
    for i in range(100):  # warm up: traces, compiles, allocator pools
        params, loss = _step(params, *batches[i % 8])
    first_loss = float(loss)
    gc.collect()
    before = _rss_mb()
    for i in range(2000):
        params, loss = _step(params, *batches[i % 8])
    last_loss = float(loss)
    gc.collect()
    growth = _rss_mb() - before
    assert growth < 25, f"resident memory grew by {growth:.1f} MB over 2,000 steps"
    assert last_loss < first_loss  # the steps did train


def test_eager_grad_and_control_flow_steps_keep_memory_flat():
    def f(w, x):
        def body(c, xi):
            c = jnp.tanh(c @ w + xi)
            return c, jnp.sum(c)

        _, ys = lax.scan(body, jnp.zeros(16), x)
        return jnp.sum(ys)

    g = morphax.grad(f)
    w = jnp.eye(16) * 0.5
    x = jnp.ones((5, 16))
    for _ in range(30):
        w = w - 0.001 * g(w, x)
    gc.collect()
    before = _rss_mb()
    for _ in range(400):
        w = w - 0.001 * g(w, x)
    w.block_until_ready()
    gc.collect()
    growth = _rss_mb() - before
    assert growth < 25, f"resident memory grew by {growth:.1f} MB over 400 eager grad steps"


def test_fresh_jitted_closures_keep_memory_flat():
    # A new function (and so a new trace and compile) per step, each closing over its own array.
    x = jnp.ones(8)
    for i in range(50):
        c = np.full(100_000, float(i), np.float32)
        morphax.jit(lambda v, c=c: v * c[:8])(x).block_until_ready()
    gc.collect()
    before = _rss_mb()
    for i in range(500):
        c = np.full(100_000, float(i), np.float32)
        morphax.jit(lambda v, c=c: v * c[:8])(x).block_until_ready()
    gc.collect()
    growth = _rss_mb() - before
    assert growth < 25, f"resident memory grew by {growth:.1f} MB over 500 fresh closures"
