"""jit benchmarks, as ratios against JAX (when installed) and NumPy measured in the same run:

1. dispatch overhead of a jitted ``f(x) = x + 1`` on an (8,) array (goal: below JAX's);
2. one training step of an MLP 784-512-512-10, batch 128: ``jit(value_and_grad)`` plus an SGD
   update (goal: within 1.3x of JAX);
3. first-call latency (trace + compile) of that step (goal: below JAX's).

Run: ``python benchmarks/jit_mlp.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np

SIZES = (784, 512, 512, 10)
BATCH = 128


def best(fn, number, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def settle(lib):
    """Wait for morphax's background C builds (the first call runs on NumPy while the compiler
    works), so steady-state timings measure the native kernels."""
    if lib.__name__ == "morphax":
        from morphax._src.compiler.backends.c import background

        background.wait()


def init_params(rng):
    params = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32)))
    return params


def make_step(lib):
    jnp = lib.numpy

    def predict(params, x):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    def loss(params, x, y):
        logits = predict(params, x)
        logp = logits - lib.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.sum(logp * y, axis=1))

    def step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        new = [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]
        return value, new

    return step


def numpy_step(params, x, y):
    """The same forward+backward by hand in NumPy (the baseline)."""
    acts, h = [x], x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
        acts.append(h)
    w, b = params[-1]
    logits = h @ w + b
    m = logits.max(1, keepdims=True)
    p = np.exp(logits - m)
    p /= p.sum(1, keepdims=True)
    value = -np.mean(np.sum((logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))) * y, 1))
    g = (p - y) / x.shape[0]
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, b = params[i]
        grads.append((acts[i].T @ g, g.sum(0)))
        if i:
            g = (g @ w.T) * (1 - acts[i] ** 2)
    grads.reverse()
    return value, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def run_lib(lib, params, x, y, number):
    import importlib

    step = lib.jit(make_step(lib))
    p = [(lib.numpy.asarray(w), lib.numpy.asarray(b)) for w, b in params]
    xs, ys = lib.numpy.asarray(x), lib.numpy.asarray(y)
    t0 = time.perf_counter()
    v, _ = step(p, xs, ys)
    lib.block_until_ready(v)
    first = time.perf_counter() - t0
    settle(lib)

    def one():
        v, new = step(p, xs, ys)
        lib.block_until_ready(new)

    per_step = best(one, number)
    f = lib.jit(lambda a: a + 1)
    small = lib.numpy.ones(8)
    f(small)
    settle(lib)
    overhead = best(lambda: f(small), 2000)
    del importlib
    return {"overhead": overhead, "step": per_step, "first_call": first}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    import morphax

    rng = np.random.default_rng(0)
    params = init_params(rng)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    rows = {"morphax": run_lib(morphax, params, x, y, args.steps)}
    small = np.ones(8, np.float32)
    rows["numpy"] = {
        "overhead": best(lambda: small + 1, 2000),
        "step": best(lambda: numpy_step(params, x, y), args.steps),
        "first_call": float("nan"),
    }
    try:
        import jax

        rows["jax"] = run_lib(jax, params, x, y, args.steps)
    except ImportError:
        pass
    print(f"{'':10s} {'x+1 overhead us':>16s} {'MLP step ms':>12s} {'first call ms':>14s}")
    for name, r in rows.items():
        print(f"{name:10s} {r['overhead'] * 1e6:16.2f} {r['step'] * 1e3:12.2f} {r['first_call'] * 1e3:14.1f}")
    m = rows["morphax"]
    for base in ("numpy", "jax"):
        if base in rows:
            b = rows[base]
            print(
                f"morphax / {base}: overhead {m['overhead'] / b['overhead']:.2f}x, step {m['step'] / b['step']:.2f}x"
                + (f", first call {m['first_call'] / b['first_call']:.2f}x" if base == "jax" else "")
            )


if __name__ == "__main__":
    main()
