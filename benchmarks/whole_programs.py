"""Issue 14's workloads (whole programs in native code), each timed for morphax's C backend, its
numpy backend and JAX (when installed) in the same run, with the goal for morphax / JAX:

- per-example gradients ``jit(vmap(grad(logistic loss)))``, 512 x 100;
- an RNN (hidden 256, 100 steps, batch 32) with ``scan``, jitted value and grad;
- ``jit(hessian(f))`` with n = 50;
- the per-call cost of a jitted ``x + 1`` on an (8,) array, and of a call with 20 array arguments;
- ``while_loop`` Newton iteration on a scalar, 1,000 steps;
- the MLP step (784-512-512-10) at a new batch size, after two others: morphax retraces and runs
  the shape-generic library its second size built (no C compile), JAX recompiles;
- a CNN training step (32x28x28x1, two 3x3 convolutions, dense), jitted;
- a transformer block (batch 8, sequence 128, width 128, 4 heads), value and grad.

Run: ``python benchmarks/whole_programs.py [--quick] [--only NAME] [--threads N] [--no-jax]``.
``--threads N`` pins BLAS, OpenMP and XLA (see native_backend.py).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from jit_mlp import init_params, make_step
from native_backend import blocked, interleaved, libraries, pin_threads, thread_env

GOALS = {
    "per-example": 1.0,
    "rnn": 0.8,
    "hessian": 1.0,
    "call": 0.5,
    "call-20": 1.0,
    "newton": 1.0,
    "new-batch": 0.1,
    "cnn": 1.0,
    "transformer": 1.0,
}
WORKLOADS = tuple(GOALS)


# ------------------------------------------------------------------------------------ workloads


def per_example(lib):
    jnp = lib.numpy

    def loss(params, x, y):
        w, b = params
        logit = jnp.dot(x, w) + b
        z = jnp.where(y > 0.5, logit, -logit)
        return jnp.logaddexp(0.0, -z)

    rng = np.random.default_rng(0)
    params = ((rng.normal(size=100) * 0.1).astype(np.float32), np.float32(0.05))
    xs = rng.normal(size=(512, 100)).astype(np.float32)
    ys = (rng.random(512) < 0.5).astype(np.float32)
    return lib.vmap(lib.grad(loss), in_axes=(None, 0, 0)), (params, xs, ys)


def rnn(lib):
    from rnn_scan import make_data, make_loss

    params, xs = make_data()
    return lib.value_and_grad(make_loss(lib)), (params, xs)


def hessian(lib):
    jnp = lib.numpy

    def f(x):
        return jnp.sum(jnp.sin(x) * jnp.cos(x[::-1])) + jnp.sum(x**2) ** 1.5

    return lib.hessian(f), (np.linspace(-1, 1, 50, dtype=np.float32),)


def call(lib):
    return (lambda x: x + 1), (np.arange(8, dtype=np.float32),)


def call_20(lib):
    return (lambda *xs: sum(xs)), tuple(np.full(8, k, np.float32) for k in range(20))


def newton(lib):
    def f(a):
        def body(c):
            y, i = c
            return y - (y * y - a) / (2 * y), i + 1

        return lib.lax.while_loop(lambda c: c[1] < 1000, body, (a, 0))

    return f, (np.float32(2.0),)


def cnn(lib):
    jnp, lax = lib.numpy, lib.lax
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(params, x, y):
        k1, k2, w = params
        h = jnp.maximum(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn), 0.0)
        h = jnp.maximum(lax.conv_general_dilated(h, k2, (2, 2), "SAME", dimension_numbers=dn), 0.0)
        logits = h.reshape(h.shape[0], -1) @ w
        return -jnp.mean(jnp.sum(y * lib.nn.log_softmax(logits), axis=-1))

    def step(params, x, y):
        loss_value, grads = lib.value_and_grad(loss)(params, x, y)
        return loss_value, [p - 0.01 * g for p, g in zip(params, grads)]

    rng = np.random.default_rng(0)
    params = [
        (rng.standard_normal((3, 3, 1, 8)) * 0.3).astype(np.float32),
        (rng.standard_normal((3, 3, 8, 16)) * 0.1).astype(np.float32),
        (rng.standard_normal((14 * 14 * 16, 10)) * 0.01).astype(np.float32),
    ]
    x = rng.standard_normal((32, 28, 28, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
    return step, (params, x, y)


def transformer(lib):
    jnp = lib.numpy
    batch, seq, width, heads = 8, 128, 128, 4

    def layer_norm(x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5)

    def block(params, x):
        wq, wk, wv, wo, w1, w2 = params
        h = layer_norm(x)

        def split(t):
            return t.reshape(batch, seq, heads, width // heads).transpose(0, 2, 1, 3)

        q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(width // heads).astype(np.float32)
        attn = jnp.einsum("bhqk,bhkd->bhqd", lib.nn.softmax(scores, axis=-1), v)
        x = x + attn.transpose(0, 2, 1, 3).reshape(batch, seq, width) @ wo
        return x + lib.nn.gelu(layer_norm(x) @ w1) @ w2

    def loss(params, x):
        return jnp.mean(block(params, x) ** 2)

    rng = np.random.default_rng(0)
    shapes = [(width, width)] * 4 + [(width, 4 * width), (4 * width, width)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    x = rng.standard_normal((batch, seq, width)).astype(np.float32)
    return lib.value_and_grad(loss), (params, x)


MAKERS = {
    "per-example": per_example,
    "rnn": rnn,
    "hessian": hessian,
    "call": call,
    "call-20": call_20,
    "newton": newton,
    "cnn": cnn,
    "transformer": transformer,
}
DESCRIPTIONS = {
    "per-example": "jit(vmap(grad)) 512x100",
    "rnn": "RNN scan value_and_grad",
    "hessian": "jit(hessian) n=50",
    "call": "jitted x + 1, (8,)",
    "call-20": "jitted call, 20 (8,) args",
    "newton": "while_loop Newton, 1000 steps",
    "new-batch": "MLP step at a new batch size",
    "cnn": "CNN training step",
    "transformer": "transformer block value_and_grad",
}


def steady(name, args):
    times = {}
    for label, lib, jit in libraries(not args.no_jax):
        f, inputs = MAKERS[name](lib)
        jitted = jit(f)
        inputs = lib.tree_util.tree_map(lib.numpy.asarray, inputs)
        if name.startswith("call"):
            # Per-call cost: dispatch without waiting, as a loop of calls would.
            fn = lambda jitted=jitted, inputs=inputs: jitted(*inputs)  # noqa: E731
            fn()
            lib.block_until_ready(fn())
        else:
            fn = blocked(lib, jitted, *inputs)
        times[label] = interleaved({label: fn}, args.repeat)[label][0]
    return times


def new_batch(args):
    """Seconds for the first call of the MLP step at each of four new batch sizes, averaged,
    after calls at two other sizes (128, then 64): morphax retraces and runs the shape-generic
    library its second size built (no C compile; background builds on, should one be needed);
    JAX recompiles for every size."""
    times = {}
    rng = np.random.default_rng(0)
    params = [(w.astype(np.float32), b.astype(np.float32)) for w, b in init_params(rng)]
    for label, lib, jit in libraries(not args.no_jax):
        step = jit(make_step(lib))
        p = [(lib.numpy.asarray(w), lib.numpy.asarray(b)) for w, b in params]

        def data(n, lib=lib):
            x = lib.numpy.asarray(rng.standard_normal((n, 784)).astype(np.float32))
            y = lib.numpy.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)])
            return x, y

        if label == "morphax[c]":
            lib.config.update("morphax_compile_in_background", False)
        for n in (128, 64):
            lib.block_until_ready(step(p, *data(n)))
        if label == "morphax[c]":
            lib.config.update("morphax_compile_in_background", True)
        spent = []
        for n in (96, 100, 112, 120):
            x, y = data(n)
            t0 = time.perf_counter()
            lib.block_until_ready(step(p, x, y))
            spent.append(time.perf_counter() - t0)
        times[label] = float(np.mean(spent))
        if label == "morphax[c]":
            lib.config.update("morphax_compile_in_background", False)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=WORKLOADS, action="append")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args()
    if args.threads:
        pin_threads(args.threads)
    args.repeat = args.repeat or (2 if args.quick else 5)
    try:
        import jax

        print(f"jax {jax.__version__}; {thread_env()}")
    except ImportError:
        args.no_jax = True
        print(f"jax not installed; {thread_env()}")
    rows = []
    for name in args.only or WORKLOADS:
        try:
            times = new_batch(args) if name == "new-batch" else steady(name, args)
        except Exception as e:  # noqa: BLE001 -- one failing workload must not hide the rest
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        rows.append((name, times))
    cols = ("morphax[c]", "morphax[numpy]", "jax")
    head = f"{'workload (ms)':<34s}" + "".join(f"{c:>16s}" for c in cols) + f"{'c/jax':>8s}{'goal':>8s}"
    print(head)
    print("-" * len(head))
    for name, times in rows:
        line = f"{DESCRIPTIONS[name]:<34s}"
        line += "".join(f"{times[c] * 1e3:16.4f}" if c in times else f"{'-':>16s}" for c in cols)
        ratio = times["morphax[c]"] / times["jax"] if "jax" in times else None
        line += f"{ratio:8.2f}" if ratio is not None else f"{'-':>8s}"
        print(line + f"{'<= ' + str(GOALS[name]):>8s}")


if __name__ == "__main__":
    main()
