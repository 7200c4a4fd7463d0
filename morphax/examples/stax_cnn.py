"""Train a small convolutional network on handwritten digits with `stax` and `optimizers.adam`.

The data are the 1,797 8x8 digit images of the UCI optdigits test set (CC BY 4.0), shipped in
morphax/examples/data. A fixed shuffle keeps 1,437 images for training and 360 for testing; the
network is two 3x3 convolutions with ReLU and max pooling, then two dense layers. Progress (loss
and accuracy) is printed as it trains.

    python -m morphax.examples.stax_cnn [--steps 400] [--batch 128] [--lr 3e-3]
"""

from __future__ import annotations

import argparse
import gzip
import pathlib
import time

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import random
from morphax.example_libraries import optimizers, stax

DATA = pathlib.Path(__file__).with_name("data") / "optdigits-test.csv.gz"


def load_digits():
    """(images float32 (n, 8, 8, 1) in [0, 1], labels int32 (n,))."""
    with gzip.open(DATA, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    images = (table[:, :64] / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    return images, table[:, 64].astype(np.int32)


def network():
    return stax.serial(
        stax.Conv(16, (3, 3), padding="SAME"),
        stax.Relu,
        stax.MaxPool((2, 2), strides=(2, 2)),
        stax.Conv(32, (3, 3), padding="SAME"),
        stax.Relu,
        stax.Flatten,
        stax.Dense(64),
        stax.Relu,
        stax.Dense(10),
        stax.LogSoftmax,
    )


def main(steps=400, batch=128, lr=3e-3, seed=0, report_every=50, log=print):
    images, labels = load_digits()
    order = np.random.default_rng(seed).permutation(len(labels))
    n_train = int(0.8 * len(labels))
    train, test = order[:n_train], order[n_train:]
    init, apply = network()
    _, params = init(random.PRNGKey(seed), (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.adam(lr)

    def loss(params, x, y):
        return -jnp.mean(jnp.take_along_axis(apply(params, x), y[:, None], axis=1))

    @morphax.jit
    def update(i, state, x, y):
        value, grads = morphax.value_and_grad(loss)(get_params(state), x, y)
        return opt_update(i, grads, state), value

    @morphax.jit
    def accuracy(params, x, y):
        return jnp.mean(jnp.argmax(apply(params, x), axis=1) == y)

    state = opt_init(params)
    batches = np.random.default_rng(seed + 1)
    start = time.perf_counter()
    history = []
    for i in range(steps):
        idx = batches.choice(train, size=batch, replace=False)
        state, value = update(i, state, images[idx], labels[idx])
        if (i + 1) % report_every == 0 or i + 1 == steps:
            p = get_params(state)
            train_acc = float(accuracy(p, images[train], labels[train]))
            test_acc = float(accuracy(p, images[test], labels[test]))
            history.append((i + 1, float(value), train_acc, test_acc))
            log(
                f"step {i + 1:4d}  loss {float(value):.4f}  train accuracy {train_acc:.3f}  "
                f"test accuracy {test_acc:.3f}  ({time.perf_counter() - start:.1f} s)"
            )
    return history


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    main(args.steps, args.batch, args.lr)
