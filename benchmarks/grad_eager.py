"""Eager `grad` of a small function (about 10 primitives on a (100,) array), as ratios against
the forward computation alone, and against HIPS autograd and JAX's eager grad when installed.

Run: ``python benchmarks/grad_eager.py``. Goal: eager grad faster than JAX's eager grad.
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np


def best(fn, number, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def make_loss(np_mod):
    def loss(x):
        y = np_mod.sin(x) * x + 1.0
        z = np_mod.tanh(y) ** 2
        w = np_mod.exp(-z) / (1.0 + x * x)
        return np_mod.sum(w * y)

    return loss


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()
    import morphax
    import morphax.numpy as jnp

    xn = np.linspace(-1, 1, 100).astype(np.float32)
    x = jnp.asarray(xn)
    loss = make_loss(jnp)
    g = morphax.grad(loss)
    rows = {
        "numpy forward": best(lambda: make_loss(np)(xn), args.number),
        "morphax forward": best(lambda: float(loss(x)), args.number),
        "morphax grad": best(lambda: np.asarray(g(x)), args.number),
    }
    try:
        import autograd
        import autograd.numpy as anp

        ag = autograd.grad(make_loss(anp))
        rows["autograd grad"] = best(lambda: ag(xn.astype(np.float64)), args.number)
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jjnp

        jg = jax.grad(make_loss(jjnp))
        xj = jjnp.asarray(xn)
        rows["jax eager grad"] = best(lambda: jg(xj).block_until_ready(), max(args.number // 4, 1))
    except ImportError:
        pass
    base = rows["morphax grad"]
    print(f"{'computation':18s} {'us/call':>10s} {'morphax grad is':>18s}")
    for name, t in rows.items():
        print(f"{name:18s} {t * 1e6:10.1f} {t / base:17.2f}x")


if __name__ == "__main__":
    main()
