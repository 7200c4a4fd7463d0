"""Per-example gradients of logistic regression (100 features, batch 512):
``vmap(grad(loss), in_axes=(None, 0, 0))`` against a Python loop of ``grad`` over the examples,
as a ratio measured in the same run (and the same code on JAX when it is installed, eager and
jitted). Both results are checked to agree before timing.

Run: ``python benchmarks/per_example_grads.py [--repeat N] [--batch B] [--features F]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from jit_mlp import settle


def best_of(fn, repeat):
    fn()  # warm caches (jit traces, abstract-eval caches)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def make_data(batch, features, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.normal(size=(features,)) * 0.1).astype(np.float32)
    b = np.float32(0.05)
    xs = rng.normal(size=(batch, features)).astype(np.float32)
    ys = (rng.random(batch) < 0.5).astype(np.float32)
    return (w, b), xs, ys


def build(lib, jnp):
    """The same code for morphax and jax: `lib` has grad/vmap/jit, `jnp` is its numpy."""

    def loss(params, x, y):
        w, b = params
        logit = jnp.dot(x, w) + b
        # log(1 + exp(-z)) for the true class, written stably
        z = jnp.where(y > 0.5, logit, -logit)
        return jnp.logaddexp(0.0, -z)

    grad_loss = lib.grad(loss)
    batched = lib.vmap(grad_loss, in_axes=(None, 0, 0))

    def looped(params, xs, ys):
        gs = [grad_loss(params, xs[i], ys[i]) for i in range(xs.shape[0])]
        return jnp.stack([g[0] for g in gs]), jnp.stack([g[1] for g in gs])

    return batched, looped, lib.jit(batched)


def _block(tree):
    for leaf in tree if isinstance(tree, (tuple, list)) else (tree,):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return tree


def measure(batch, features, repeat, loop_repeat):
    import morphax
    import morphax.numpy as mjnp

    params, xs, ys = make_data(batch, features)
    rows = []
    batched, looped, jitted = build(morphax, mjnp)
    got_v, got_l = batched(params, xs, ys), looped(params, xs, ys)
    np.testing.assert_allclose(np.asarray(got_v[0]), np.asarray(got_l[0]), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_v[1]), np.asarray(got_l[1]), rtol=1e-4, atol=1e-6)
    t_loop = best_of(lambda: morphax.block_until_ready(looped(params, xs, ys)), loop_repeat)
    rows.append(("morphax", "loop of grad", t_loop))
    rows.append(
        ("morphax", "vmap(grad)", best_of(lambda: morphax.block_until_ready(batched(params, xs, ys)), repeat))
    )
    jitted(params, xs, ys)
    settle(morphax)
    rows.append(
        (
            "morphax",
            "jit(vmap(grad))",
            best_of(lambda: morphax.block_until_ready(jitted(params, xs, ys)), repeat),
        )
    )
    try:
        import jax
        import jax.numpy as jjnp
    except ImportError:
        jax = None
    if jax is not None:
        jparams = (jjnp.asarray(params[0]), jjnp.asarray(params[1]))
        jxs, jys = jjnp.asarray(xs), jjnp.asarray(ys)
        jb, jl, jj = build(jax, jjnp)
        np.testing.assert_allclose(
            np.asarray(jb(jparams, jxs, jys)[0]), np.asarray(got_v[0]), rtol=1e-4, atol=1e-6
        )
        rows.append(("jax", "loop of grad", best_of(lambda: _block(jl(jparams, jxs, jys)), loop_repeat)))
        rows.append(("jax", "vmap(grad)", best_of(lambda: _block(jb(jparams, jxs, jys)), repeat)))
        rows.append(("jax", "jit(vmap(grad))", best_of(lambda: _block(jj(jparams, jxs, jys)), repeat)))
    return rows


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeat", type=int, default=20, help="timed runs of the vmapped versions (best is kept)"
    )
    parser.add_argument("--loop-repeat", type=int, default=2, help="timed runs of the Python loop")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--features", type=int, default=100)
    args = parser.parse_args()
    rows = measure(args.batch, args.features, args.repeat, args.loop_repeat)
    loops = {lib: t for lib, what, t in rows if what == "loop of grad"}
    print(f"per-example gradients: logistic regression, {args.features} features, batch {args.batch}")
    print(
        f"{'library':8s} {'method':16s} {'time ms':>10s} {'speedup vs loop':>16s} {'vs jax same method':>19s}"
    )
    jax_times = {what: t for lib, what, t in rows if lib == "jax"}
    for lib, what, t in rows:
        vs_jax = f"{t / jax_times[what]:18.2f}x" if lib == "morphax" and what in jax_times else ""
        print(f"{lib:8s} {what:16s} {t * 1e3:10.3f} {loops[lib] / t:15.1f}x {vs_jax}")
    if "jax" not in loops:
        print("(jax not installed: no JAX comparison)")


if __name__ == "__main__":
    main()
