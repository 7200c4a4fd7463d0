"""Data-parallel training of a small MLP on handwritten digits with `pmap`: every device holds the
parameters, takes its slice of each batch, computes its gradients, and `lax.pmean` averages them
across devices, so every device applies the same update.

The data are the 1,797 8x8 digit images shipped in morphax/examples/data (see stax_cnn.py): a
fixed shuffle keeps 1,437 for training and 360 for testing; the network is 64-128-128-10 with tanh,
trained by SGD with momentum on batches of 128 drawn by a seeded generator, so the run does the
same arithmetic whatever the number of devices (up to the order of the gradient sums).

    python -m morphax.examples.data_parallel --devices 2     # one process, two CPU devices
    mpirun -n 2 python -m morphax.examples.data_parallel     # two processes, one device each
    python -m morphax.examples.data_parallel --devices 1     # the one-device reference

Under an MPI launcher the script calls `morphax.distributed.initialize()`; each process then
feeds its own devices' slices of the batch (`--devices` sets the devices per process). Progress
(loss, accuracy) is printed by process 0; `--save PATH` writes the final parameters (.npz).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

SIZES = (64, 128, 128, 10)
AXIS = "batch"


def init_params(sizes=SIZES, seed=0):
    """[(w, b), ...] as float32 NumPy arrays, scaled by 1/sqrt(fan-in)."""
    rng = np.random.default_rng(seed)
    return [
        ((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def make_train_step(lr=0.1, momentum=0.9, axis_name=AXIS):
    """The pmapped step `(params, velocity, x, y) -> (params, velocity, loss)`: `x` (devices,
    rows, features) and `y` (devices, rows) integer labels are split across devices; the
    parameters and velocity are passed whole (in_axes None) and come back whole (out_axes None),
    every device having applied the same averaged gradient."""
    import morphax
    import morphax.numpy as jnp
    from morphax import lax

    def predict(params, x):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    def loss(params, x, y):
        logits = predict(params, x)
        logp = logits - morphax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, velocity, x, y):
        value, grads = morphax.value_and_grad(loss)(params, x, y)
        # Every device's slice has the same number of rows, so the mean of the devices' means
        # is the mean over the whole batch. One pmean for both: one exchange between devices.
        grads, value = lax.pmean((grads, value), axis_name)
        velocity = morphax.tree.map(lambda v, g: momentum * v + g, velocity, grads)
        params = morphax.tree.map(lambda p, v: p - lr * v, params, velocity)
        return params, velocity, value

    train_step = morphax.pmap(step, axis_name, in_axes=(None, None, 0, 0), out_axes=(None, None, None))
    accuracy = morphax.jit(lambda params, x, y: jnp.mean(jnp.argmax(predict(params, x), axis=1) == y))
    return train_step, accuracy


def launched_by_mpi() -> bool:
    """Whether an MPI launcher (Open MPI, MPICH's Hydra) started this process as one of several."""
    for size in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        if os.environ.get(size, "1") != "1":
            return True
    return False


def setup(devices_per_process=None):
    """Make `devices_per_process` CPU devices and join the MPI run (under mpirun), before the first
    computation. Returns (process index, process count, local device count). NB: morphax gives
    each device of the machine an equal share of its cores for BLAS and OpenMP
    (runtime/thread_pools.py), so two devices, or two processes, on two cores do not compete."""
    import morphax

    if devices_per_process is not None:
        morphax.config.update("jax_num_cpu_devices", devices_per_process)
    if launched_by_mpi():
        morphax.distributed.initialize()
    return morphax.process_index(), morphax.process_count(), morphax.local_device_count()


def train(steps=300, batch=128, lr=0.1, seed=0, report_every=50, log=print):
    """Train on this process's devices (all processes' devices after `setup` under mpirun);
    returns (final parameters as NumPy arrays, history of (step, loss, test accuracy))."""
    import morphax
    from morphax.examples.stax_cnn import load_digits

    rank, count, local = morphax.process_index(), morphax.process_count(), morphax.local_device_count()
    total = local * count
    if batch % total:
        raise ValueError(f"data_parallel: the batch ({batch}) must split evenly over {total} devices")
    images, labels = load_digits()
    images = images.reshape(len(images), -1)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_train = int(0.8 * len(labels))
    train_idx, test_idx = order[:n_train], order[n_train:]
    train_step, accuracy = make_train_step(lr)
    params = init_params(seed=seed)
    velocity = [(np.zeros_like(w), np.zeros_like(b)) for w, b in params]
    batches = np.random.default_rng(seed + 1)
    mine = slice(rank * local, (rank + 1) * local)  # this process's devices' slices
    history, start = [], time.perf_counter()
    for i in range(steps):
        idx = batches.choice(train_idx, size=batch, replace=False)  # the same in every process
        x = images[idx].reshape(total, batch // total, -1)[mine]
        y = labels[idx].reshape(total, batch // total)[mine]
        params, velocity, value = train_step(params, velocity, x, y)
        if (i + 1) % report_every == 0 or i + 1 == steps:
            test_acc = float(accuracy(params, images[test_idx], labels[test_idx]))
            history.append((i + 1, float(value), test_acc))
            if rank == 0:
                log(
                    f"step {i + 1:4d}  loss {float(value):.4f}  test accuracy {test_acc:.3f}  "
                    f"({total} device{'s' if total > 1 else ''}, {count} process{'es' if count > 1 else ''}, "
                    f"{time.perf_counter() - start:.1f} s)"
                )
    return [(np.asarray(w), np.asarray(b)) for w, b in params], history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=None, help="CPU devices per process (default 1)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--report-every", type=int, default=50)
    parser.add_argument("--save", default=None, help="write the final parameters to this .npz (process 0)")
    args = parser.parse_args(argv)
    rank, _, _ = setup(args.devices)
    params, _ = train(args.steps, args.batch, args.lr, report_every=args.report_every)
    if args.save and rank == 0:
        np.savez(
            args.save, **{f"{kind}{i}": p for i, layer in enumerate(params) for kind, p in zip("wb", layer)}
        )
    import morphax

    if morphax.process_count() > 1:
        morphax.distributed.shutdown()


if __name__ == "__main__":
    main()
