"""Train a small convolutional network on handwritten digits: morphax's main job.

    python -m morphax.examples.train                 # seconds on two cores; test accuracy >= 97%
    python -m morphax.examples.train --help          # the options

The data are the 1,797 8x8 grey-level digit images (pixels 0..16, labels 0..9) of the UCI test
set "Optical Recognition of Handwritten Digits" by E. Alpaydin and C. Kaynak (1998), UCI Machine
Learning Repository, doi:10.24432/C50P49, licensed CC BY 4.0; the file ships in
morphax/examples/data (see its README.md). A fixed shuffle (the same whatever --seed says) keeps
1,437 images for training and 360 for testing.

The network (`morphax.example_libraries.stax`) is two 3x3 convolutions with ReLU (the first
followed by 2x2 max pooling), then a dense layer of 64 and the 10 log-probabilities; `optimizers.adam`
minimises the cross-entropy over shuffled mini-batches, one `morphax.jit`-compiled step per batch.
Each epoch shows a progress line (epoch, loss, accuracy, steps per second: one line redrawn in
place on a terminal, one plain line per epoch otherwise); at the end the test accuracy prints and
the loss and accuracy curves are drawn to a PNG (`--plot`, with matplotlib: the `plot` extra).

With `--devices N` (N > 1) the step runs data-parallel under `morphax.pmap` on N CPU devices:
each device takes its slice of the batch and `lax.pmean` averages the gradients, so every device
applies the same update (see data_parallel.py).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

import numpy as np

AXIS = "batch"
SPLIT_SEED = 0  # the train/test split never changes, so accuracies of different runs compare
BAR_WIDTH = 20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m morphax.examples.train",
        description="Train a small convolutional network on the UCI handwritten digits (8x8, 1,797 "
        "images, shipped with morphax) and report the test accuracy.",
        epilog="Data: E. Alpaydin, C. Kaynak, Optical Recognition of Handwritten Digits (1998), UCI "
        "Machine Learning Repository, doi:10.24432/C50P49, CC BY 4.0.",
    )
    parser.add_argument("--epochs", type=int, default=10, help="passes over the 1,437 training images (10)")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step (64)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's step size (3e-3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and batch order (0)")
    parser.add_argument(
        "--backend",
        choices=("c", "numpy"),
        default=None,
        help="how jit runs programs: c (compiled C, the default where a compiler works) or numpy",
    )
    parser.add_argument(
        "--devices", type=int, default=1, help="CPU devices; more than 1 trains data-parallel with pmap (1)"
    )
    parser.add_argument(
        "--plot",
        default="train_curves.png",
        metavar="PATH",
        help="PNG of the loss and accuracy curves (train_curves.png; needs matplotlib); '' for none",
    )
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "devices"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.batch_size % args.devices:
        parser.error(
            f"--batch-size {args.batch_size} must split evenly over --devices {args.devices}: "
            "pick a batch size that is a multiple of the device count"
        )
    return args


def split(labels):
    """(train indices, test indices): a fixed 80/20 shuffle of the data set."""
    order = np.random.default_rng(SPLIT_SEED).permutation(len(labels))
    n_train = int(0.8 * len(labels))
    return order[:n_train], order[n_train:]


def network(stax=None):
    """(init, apply) of the network, built with `stax` (morphax's example_libraries.stax unless
    another library's is given: tests/tpu/chip_reference.py builds it with JAX's)."""
    if stax is None:
        from morphax.example_libraries import stax

    return stax.serial(
        stax.Conv(32, (3, 3), padding="SAME"),
        stax.Relu,
        stax.MaxPool((2, 2), strides=(2, 2)),
        stax.Conv(64, (3, 3), padding="SAME"),
        stax.Relu,
        stax.Flatten,
        stax.Dense(64),
        stax.Relu,
        stax.Dense(10),
        stax.LogSoftmax,
    )


def make_functions(apply, opt_update, get_params, devices):
    """(step, evaluate): the compiled training step `(i, state, x, y) -> (state, loss, correct)`
    and `(params, x, y) -> correct`. With several devices the step is pmapped over the leading
    axis of `x` and `y`, averaging gradients and loss over the devices."""
    import morphax
    import morphax.numpy as jnp
    from morphax import lax

    def loss_and_correct(params, x, y):
        logp = apply(params, x)
        loss = -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        return loss, jnp.sum(jnp.argmax(logp, axis=1) == y)

    def step(i, state, x, y, axis_name=None):
        (loss, correct), grads = morphax.value_and_grad(loss_and_correct, has_aux=True)(
            get_params(state), x, y
        )
        if axis_name is not None:
            # Equal slices per device, so the mean of the devices' means is the batch mean.
            grads, loss = lax.pmean((grads, loss), axis_name)
            correct = lax.psum(correct, axis_name)
        return opt_update(i, grads, state), loss, correct

    if devices > 1:
        compiled = morphax.pmap(
            lambda i, state, x, y: step(i, state, x, y, AXIS),
            AXIS,
            in_axes=(None, None, 0, 0),
            out_axes=(None, None, None),
        )
    else:
        compiled = morphax.jit(step)
    evaluate = morphax.jit(lambda params, x, y: loss_and_correct(params, x, y)[1])
    return compiled, evaluate


class Progress:
    """One epoch's progress line: redrawn in place with '\\r' on a terminal (at most ten times a
    second), written once at the end of the epoch otherwise."""

    def __init__(self, epoch, epochs, steps, out, where=""):
        self.epoch, self.epochs, self.steps, self.out = epoch, epochs, steps, out
        self.where = where
        self.live = bool(getattr(out, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.drawn = 0.0

    def line(self, done, loss, accuracy, extra=""):
        filled = BAR_WIDTH * done // self.steps
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        return (
            f"epoch {self.epoch:{len(str(self.epochs))}d}/{self.epochs} "
            f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self.steps}  "
            f"loss {loss:.4f}  accuracy {accuracy:.3f}  {rate:6.1f} steps/s{extra}{self.where}"
        )

    def update(self, done, read):
        """`read()` gives (mean loss, accuracy) so far; called only when the line is redrawn,
        since reading waits for the device."""
        now = time.perf_counter()
        if self.live and (now - self.drawn > 0.1 or done == self.steps):
            self.drawn = now
            self.out.write("\r" + self.line(done, *read()))
            self.out.flush()

    def finish(self, loss, accuracy, test_accuracy):
        text = self.line(self.steps, loss, accuracy, f"  test accuracy {test_accuracy:.3f}")
        self.out.write(("\r" if self.live else "") + text + "\n")
        self.out.flush()


def running_means(losses, corrects, batch):
    """(mean loss, accuracy) over the steps so far, from the steps' device values."""
    return float(np.mean([float(v) for v in losses])), sum(int(c) for c in corrects) / (len(corrects) * batch)


def plot_curves(history, path):
    """Draw loss and accuracy per epoch to `path`; returns False when matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    epochs = [h["epoch"] for h in history]
    # A Figure with its own Agg canvas: no pyplot, so no global state and no display needed.
    fig = Figure(figsize=(9, 3.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_loss, ax_acc = fig.subplots(1, 2)
    ax_loss.plot(epochs, [h["loss"] for h in history], marker="o", label="training loss")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss", yscale="log")
    ax_acc.plot(epochs, [h["train_accuracy"] for h in history], marker="o", label="training batches")
    ax_acc.plot(epochs, [h["test_accuracy"] for h in history], marker="s", label="test set")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("morphax: small CNN on the UCI optical digits")
    fig.savefig(path, dpi=100)
    return True


def train(args, out=sys.stdout):
    """Run the training `args` (from `parse_args`) describe, writing progress to `out`. Returns
    {"history": [per-epoch dict], "test_accuracy": float, "test_correct": int, "test_size": int,
    "seconds": float}."""
    if args.devices > 1:
        from morphax.examples.data_parallel import setup

        setup(args.devices)  # CPU devices and their share of the cores, before any computation
    import morphax

    previous_backend = morphax.config.read("morphax_backend")
    if args.backend is not None:
        morphax.config.update("morphax_backend", args.backend)
    try:
        return _train(args, out)
    finally:
        morphax.config.update("morphax_backend", previous_backend)  # for main() called in-process


def device_label(count: int) -> str:
    """Where the steps run, for the progress line: "  on cpu:0", "  on tpu:0 (TPU v5 lite)"."""
    import morphax

    device = morphax.devices()[0]
    if count > 1:
        return f"  on {count} {device.platform} devices"
    kind = f" ({device.device_kind})" if device.device_kind != device.platform else ""
    return f"  on {device.platform}:{device.id}{kind}"


def _train(args, out):
    from morphax import random
    from morphax.example_libraries import optimizers
    from morphax.examples.stax_cnn import load_digits

    images, labels = load_digits()
    train_idx, test_idx = split(labels)
    init, apply = network()
    _, params = init(random.PRNGKey(args.seed), (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.adam(args.lr)
    step, evaluate = make_functions(apply, opt_update, get_params, args.devices)
    state = opt_init(params)

    batch, devices = args.batch_size, args.devices
    steps = len(train_idx) // batch  # every epoch reshuffles, so the images left over differ each time
    if steps == 0:
        raise ValueError(
            f"train: --batch-size {batch} is larger than the training set ({len(train_idx)} images)"
        )
    shuffle = np.random.default_rng(args.seed + 1)
    history, i, start = [], 0, time.perf_counter()
    where = device_label(devices)
    for epoch in range(1, args.epochs + 1):
        order = shuffle.permutation(train_idx)
        bar = Progress(epoch, args.epochs, steps, out, where)
        losses, corrects = [], []
        so_far = functools.partial(running_means, losses, corrects, batch)

        for s in range(steps):
            idx = order[s * batch : (s + 1) * batch]
            x, y = images[idx], labels[idx]
            if devices > 1:
                x, y = x.reshape(devices, batch // devices, 8, 8, 1), y.reshape(devices, batch // devices)
            state, loss, correct = step(i, state, x, y)
            losses.append(loss)
            corrects.append(correct)
            i += 1
            bar.update(s + 1, so_far)
        loss, accuracy = so_far()
        test_correct = int(evaluate(get_params(state), images[test_idx], labels[test_idx]))
        bar.finish(loss, accuracy, test_correct / len(test_idx))
        history.append(
            {
                "epoch": epoch,
                "loss": loss,
                "train_accuracy": accuracy,
                "test_accuracy": test_correct / len(test_idx),
                "steps_per_second": steps / (time.perf_counter() - bar.start),
            }
        )
    return {
        "history": history,
        "test_accuracy": test_correct / len(test_idx),
        "test_correct": test_correct,
        "test_size": len(test_idx),
        "seconds": time.perf_counter() - start,
    }


def main(argv=None, out=None):
    """The command line: train, print the summary, draw the curves. Returns `train`'s result
    with "plot" added (the PNG's path, or None)."""
    out = sys.stdout if out is None else out
    args = parse_args(argv)
    result = train(args, out)
    out.write(
        f"test accuracy {result['test_accuracy']:.4f} ({result['test_correct']}/{result['test_size']} "
        f"held-out images) after {args.epochs} epochs in {result['seconds']:.1f} s\n"
    )
    result["plot"] = None
    if args.plot:
        if plot_curves(result["history"], args.plot):
            result["plot"] = args.plot
            out.write(f"loss and accuracy curves written to {args.plot}\n")
        else:
            out.write(
                'no plot: matplotlib is not installed (pip install "morphax[plot]", or pip install '
                "matplotlib, then run again)\n"
            )
    out.flush()
    return result


if __name__ == "__main__":
    main()
