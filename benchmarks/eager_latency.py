"""Eager per-op latency: ``x + y`` and ``jnp.sin(x)`` on (8,) float32 arrays, as a ratio against
NumPy measured in the same run (and against JAX when it is installed).

Run: ``python benchmarks/eager_latency.py``. Goal: ratio to NumPy under 5x.
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np


def best_per_call(fn, number, repeat=7):
    fn()  # warm caches
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def measure(number):
    import morphax.numpy as jnp

    results = {}
    xn = np.linspace(0, 1, 8, dtype=np.float32)
    yn = np.linspace(1, 2, 8, dtype=np.float32)
    xm, ym = jnp.asarray(xn), jnp.asarray(yn)
    results["x + y"] = {
        "numpy": best_per_call(lambda: xn + yn, number),
        "morphax": best_per_call(lambda: xm + ym, number),
    }
    results["sin(x)"] = {
        "numpy": best_per_call(lambda: np.sin(xn), number),
        "morphax": best_per_call(lambda: jnp.sin(xm), number),
    }
    try:
        import jax
        import jax.numpy as jjnp

        xj, yj = jjnp.asarray(xn), jjnp.asarray(yn)
        results["x + y"]["jax"] = best_per_call(lambda: (xj + yj).block_until_ready(), number // 10)
        results["sin(x)"]["jax"] = best_per_call(lambda: jjnp.sin(xj).block_until_ready(), number // 10)
        del jax
    except ImportError:
        pass
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    results = measure(args.number)
    print(
        f"{'op':10s} {'numpy us':>10s} {'morphax us':>11s} {'ratio':>7s} {'jax us':>9s} {'morphax/jax':>12s}"
    )
    for op, r in results.items():
        ratio = r["morphax"] / r["numpy"]
        jax_part = ""
        if "jax" in r:
            jax_part = f" {r['jax'] * 1e6:9.2f} {r['morphax'] / r['jax']:12.2f}"
        print(f"{op:10s} {r['numpy'] * 1e6:10.2f} {r['morphax'] * 1e6:11.2f} {ratio:6.2f}x{jax_part}")


if __name__ == "__main__":
    main()
