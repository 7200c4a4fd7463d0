"""An RNN written with `lax.scan` (hidden 256, T = 100, batch 32): the jitted forward+backward
time as a ratio against JAX (when installed), measured in the same run.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/rnn_scan.py`` (pin BLAS threads on small machines,
or oversubscription dominates both libraries' timings).
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np
from jit_mlp import settle

HIDDEN, T, BATCH, FEATURES = 256, 100, 32, 64


def make_loss(lib):
    jnp, lax = lib.numpy, lib.lax

    def loss(params, xs):
        w_h, w_x, b = params

        def cell(h, x):
            h = jnp.tanh(h @ w_h + x @ w_x + b)
            return h, jnp.sum(h)

        h0 = jnp.zeros((BATCH, HIDDEN), dtype=xs.dtype)
        h, ys = lax.scan(cell, h0, xs)
        return jnp.mean(h**2) + 1e-3 * jnp.mean(ys)

    return loss


def make_data(seed=0):
    """(params, xs): the weights (scaled by fan-in) and the input sequence."""
    rng = np.random.default_rng(seed)
    params = (
        (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32),
        (rng.standard_normal((FEATURES, HIDDEN)) / np.sqrt(FEATURES)).astype(np.float32),
        np.zeros(HIDDEN, np.float32),
    )
    return params, rng.standard_normal((T, BATCH, FEATURES)).astype(np.float32)


def run(lib, params, xs, number):
    step = lib.jit(lib.value_and_grad(make_loss(lib)))
    p = tuple(lib.numpy.asarray(a) for a in params)
    x = lib.numpy.asarray(xs)
    t0 = time.perf_counter()
    lib.block_until_ready(step(p, x))
    first = time.perf_counter() - t0
    settle(lib)
    per = min(timeit.repeat(lambda: lib.block_until_ready(step(p, x)), number=number, repeat=3)) / number
    value, grads = step(p, x)
    return per, first, float(value), [np.asarray(g) for g in grads]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=3)
    args = parser.parse_args()
    import morphax

    params, xs = make_data()
    rows = {"morphax": run(morphax, params, xs, args.number)}
    try:
        import jax

        rows["jax"] = run(jax, params, xs, args.number)
    except ImportError:
        pass
    print(f"{'':8s} {'fwd+bwd ms':>11s} {'first call ms':>14s} {'loss':>10s}")
    for name, (per, first, value, _) in rows.items():
        print(f"{name:8s} {per * 1e3:11.1f} {first * 1e3:14.1f} {value:10.5f}")
    if "jax" in rows:
        m, j = rows["morphax"], rows["jax"]
        err = max(float(np.max(np.abs(a - b))) for a, b in zip(m[3], j[3]))
        print(
            f"morphax / jax: step {m[0] / j[0]:.2f}x, first call {m[1] / j[1]:.2f}x; max |grad diff| {err:.2e}"
        )


if __name__ == "__main__":
    main()
