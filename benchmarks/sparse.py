"""Sparse-dense matrix product (SpMM) of experimental.sparse, as ratios against SciPy's sparse
matmul and JAX's BCOO (when `jax` is importable) measured in the same run:

    A: n x n with nnz stored elements (uniformly placed, float32), X: n x k dense (float32),
    time of ``A @ X`` under jit, for BCOO and BCSR (goal in issue 35: <= 1.0x SciPy, <= 0.5x JAX).

Run: ``python benchmarks/sparse.py [--n 100000] [--nnz 1000000] [--k 64] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp


def best(fn, repeat):
    fn()  # compile / warm up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def settle():
    from morphax._src.compiler.backends.c import background

    background.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = rng.integers(0, args.n, args.nnz)
    cols = rng.integers(0, args.n, args.nnz)
    vals = rng.standard_normal(args.nnz).astype(np.float32)
    A = sp.coo_matrix((vals, (rows, cols)), shape=(args.n, args.n)).tocsr()
    A.sum_duplicates()
    X = rng.standard_normal((args.n, args.k)).astype(np.float32)
    want = A @ X
    t_scipy = best(lambda: A @ X, args.repeat)
    print(f"A: {args.n}x{args.n}, nnz={A.nnz}; X: {args.n}x{args.k}")
    print(f"scipy csr @ dense: {t_scipy * 1e3:9.2f} ms")

    import morphax
    from morphax.experimental import sparse

    results = {}
    bcoo = sparse.BCOO.from_scipy_sparse(A)
    bcsr = sparse.BCSR.from_scipy_sparse(A)
    for name, mat in [("morphax BCOO", bcoo), ("morphax BCSR", bcsr)]:
        f = morphax.jit(lambda m, x: m @ x)
        out = f(mat, X).block_until_ready()
        settle()
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-3, atol=1e-3)
        results[name] = best(lambda: f(mat, X).block_until_ready(), args.repeat)  # noqa: B023
    t_jax = None
    try:
        import jax
        from jax.experimental import sparse as jsparse

        jm = jsparse.BCOO.from_scipy_sparse(A)
        jf = jax.jit(lambda m, x: m @ x)
        t_jax = best(lambda: jf(jm, X).block_until_ready(), args.repeat)
        print(f"jax BCOO @ dense:  {t_jax * 1e3:9.2f} ms")
    except ImportError:
        print("jax BCOO @ dense:  (jax not importable)")
    for name, t in results.items():
        line = f"{name} @ dense: {t * 1e3:9.2f} ms  = {t / t_scipy:5.2f}x SciPy"
        if t_jax:
            line += f", {t / t_jax:5.2f}x JAX BCOO"
        print(line)


if __name__ == "__main__":
    main()
