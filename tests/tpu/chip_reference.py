"""Results that morphax must reproduce on a TPU, computed by either library on the chip it runs on:

    python3 tests/tpu/chip_reference.py jax OUT.json       # JAX 0.10.2's numbers on this chip
    python3 tests/tpu/chip_reference.py morphax OUT.json   # morphax's, to compare by hand

JAX's run on a TPU v5e is kept as tests/data/chip_reference_tpu_v5e.json, which
tests/tpu/test_tpu.py compares morphax with. The workloads: the founding article's snippets
(morphax/examples/seed_examples.py), 20 Adam steps of the main job's CNN (the network of
morphax/examples/train.py, built with `example_libraries.stax` of the library under test) on fixed
batches of the shipped digits, and 20 SGD steps of a 784-512-512-10 MLP, all at the default matmul
and convolution precision (bfloat16 passes for float32 on a TPU, in both libraries). Only the chip
can run two libraries' programs to the same rounding, so the file is recorded there, one process
per library (the chip admits one)."""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np

STEPS = 20
BATCH = 64


def cnn_losses(lib):
    jax = importlib.import_module(lib)
    jnp = importlib.import_module(f"{lib}.numpy")
    stax = importlib.import_module(f"{lib}.example_libraries.stax")
    optimizers = importlib.import_module(f"{lib}.example_libraries.optimizers")
    from morphax.examples.stax_cnn import load_digits  # plain NumPy: opens no device
    from morphax.examples.train import network

    images, labels = load_digits()
    init, apply = network(stax)
    _, params = init(jax.random.PRNGKey(0), (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.adam(3e-3)

    def loss(params, x, y):
        return -jnp.mean(jnp.take_along_axis(apply(params, x), y[:, None], axis=1))

    @jax.jit
    def step(i, state, x, y):
        value, grads = jax.value_and_grad(loss)(get_params(state), x, y)
        return opt_update(i, grads, state), value

    state, losses = opt_init(params), []
    for i in range(STEPS):
        sl = slice(i * BATCH, (i + 1) * BATCH)
        state, value = step(i, state, images[sl], labels[sl])
        losses.append(float(value))
    final = jax.tree_util.tree_leaves(get_params(state))
    return losses, [float(np.linalg.norm(np.asarray(p, np.float64))) for p in final]


def mlp_losses(lib):
    jax = importlib.import_module(lib)
    jnp = importlib.import_module(f"{lib}.numpy")
    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)
    params = [
        (rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.normal(size=(STEPS, 256, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, (STEPS, 256))]

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w + b) * y, axis=1))

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), value

    losses = []
    for i in range(STEPS):
        params, value = step(params, x[i], y[i])
        losses.append(float(value))
    return losses, [
        float(np.linalg.norm(np.asarray(p, np.float64))) for p in jax.tree_util.tree_leaves(params)
    ]


def run(lib):
    from morphax.examples import seed_examples

    jax = importlib.import_module(lib)
    device = jax.devices()[0]
    cnn, cnn_params = cnn_losses(lib)
    mlp, mlp_params = mlp_losses(lib)
    return {
        "library": lib,
        "device": f"{device.platform} {device.device_kind}",
        "seed_examples": seed_examples.run(lib),
        "cnn_losses": cnn,
        "cnn_param_norms": cnn_params,
        "mlp_losses": mlp,
        "mlp_param_norms": mlp_params,
    }


if __name__ == "__main__":
    lib, out = sys.argv[1], sys.argv[2]
    result = run(lib)
    with open(out, "w") as fh:
        json.dump(result, fh)
    print(
        f"{lib} on {result['device']}: cnn loss {result['cnn_losses'][0]:.4f} -> {result['cnn_losses'][-1]:.4f}, "
        f"mlp loss {result['mlp_losses'][0]:.4f} -> {result['mlp_losses'][-1]:.4f}"
    )
