"""random.normal benchmark: ``random.normal(key, (10_000_000,))`` jitted in morphax, against JAX
(when installed) and NumPy's ``default_rng().standard_normal`` measured in the same run, printed
as times and ratios. Each timing is the best of several repeats after a warm-up call.

Run: ``python benchmarks/random_normal.py [--n N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from jit_mlp import settle


def best(fn, repeat):
    fn()  # warm-up: compile, allocate
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_morphax(n, repeat):
    import morphax
    from morphax import random

    f = morphax.jit(lambda k: random.normal(k, (n,)))
    key = random.PRNGKey(0)
    f(key).block_until_ready()
    settle(morphax)
    return best(lambda: f(key).block_until_ready(), repeat)


def bench_jax(n, repeat):
    try:
        import jax
    except ImportError:
        return None
    f = jax.jit(lambda k: jax.random.normal(k, (n,)))
    key = jax.random.PRNGKey(0)
    return best(lambda: f(key).block_until_ready(), repeat)


def bench_numpy(n, repeat):
    rng = np.random.default_rng(0)
    return best(lambda: rng.standard_normal(n, dtype=np.float32), repeat)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    t_mx = bench_morphax(args.n, args.repeat)
    t_jax = bench_jax(args.n, args.repeat)
    t_np = bench_numpy(args.n, args.repeat)
    print(f"random.normal(key, ({args.n:_},)) float32, best of {args.repeat}")
    print(f"  morphax (jit)               {t_mx * 1e3:9.1f} ms")
    if t_jax is None:
        print("  jax                         not installed")
    else:
        print(f"  jax (jit)                   {t_jax * 1e3:9.1f} ms")
    print(f"  numpy default_rng (float32) {t_np * 1e3:9.1f} ms")
    if t_jax is not None:
        print(f"  morphax / jax   = {t_mx / t_jax:6.2f}x")
    print(f"  morphax / numpy = {t_mx / t_np:6.2f}x")


if __name__ == "__main__":
    main()
