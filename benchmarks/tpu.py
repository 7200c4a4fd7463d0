"""morphax against JAX 0.10.2 on one accelerator (a TPU v5e chip), in one run: each workload is
written once against JAX's API names (``jax.jit``, ``jax.grad``, ``jax.vmap``, ``jax.random``,
``jax.device_put``, ``jax.block_until_ready``, ``jnp.*``, ``jax.lax.*``) and run by both
libraries, each on the device it defaults to. The table gives morphax / JAX and the goal:

1. ``matmul``: bf16 matrix product 8192^3, jitted, inputs device_put; TFLOP/s of each and the
   fraction of the v5e's 197 TFLOP/s peak (goal: morphax / JAX TFLOP/s >= 0.98);
2. ``mlp``: an SGD step of the MLP 784-512-512-10 of ``jit_mlp.py`` (softmax cross-entropy,
   value_and_grad, update), batch 1024, float32, params and batch device-resident (goal <= 1.0);
3. ``transformer``: one transformer block (batch 16, sequence 1024, width 1024, 16 heads,
   bfloat16), jitted value_and_grad with respect to the params (goal <= 1.0);
4. ``cnn``: the training step of ``morphax/examples/train.py``'s CNN (``example_libraries.stax``:
   two 3x3 convolutions with ReLU, max pooling, dense 64, 10 outputs, on 8x8x1 digits) with
   ``optimizers.adam``, batch 256 (goal <= 1.0);
5. ``per-example``: ``jit(vmap(grad(loss), in_axes=(None, 0, 0)))`` of that MLP, batch 256
   (goal <= 1.0);
6. ``call``: a jitted ``x + 1`` on a device-resident (8,) float32 array, per call with its
   ``.block_until_ready()`` (goal <= 1.0);
7. ``eager``: an eager ``x + y`` on (8,) device-resident float32 arrays, per op with its wait
   (goal <= 1.0);
8. ``first-call``: the first call (trace + compile + run + wait) of the MLP step in a fresh
   process with an empty compilation cache: morphax gets a new ``MORPHAX_CACHE_DIR``, JAX runs
   without its persistent cache (its default) (goal <= 1.0);
9. ``first-call-warm``: the same in a fresh process whose disk cache an earlier process filled
   (morphax: the process after 8's, with its cache directory), against JAX's first call above,
   which is what a JAX user gets by default (goal <= 0.2);
10. ``transformer_lm``: tokens/s of ``python -m morphax.examples.transformer_lm --size large
    --steps N`` against the same source with its three morphax imports turned into JAX's, run by
    the JAX interpreter (goal: morphax / JAX tokens/s >= 1.0); "not available" until the example
    exists.

Each library runs in fresh processes of its own, one at a time (a TPU admits one process):
``python benchmarks/tpu.py --worker jax|morphax --workload NAME [--workload NAME ...]`` imports
that library alone (``import jax`` or ``import morphax as jax``) and, per workload, warms up
(compiles), times calls with ``time.perf_counter`` (each timing loops calls for at least 0.2 s;
the best of five) and prints one JSON line, device included. Workloads 1-7 share one process per
library and round (opening a TPU costs a process about 10 s; ``--separate`` gives each its own);
8, 9 and 10 always get fresh ones. The parent runs the workers in interleaved rounds (JAX,
morphax, JAX, morphax, ... for ``--rounds``; transformer_lm, which averages 100 steps itself, in
the first ``--lm-rounds`` only), reports each library's median round (with the range over the
rounds: on a TPU a fresh process's timings of a small row vary by up to 5%), and prints a
markdown table. A workload that raises, kills its worker or outlives ``--timeout`` is a row marked
as an error (its last stderr lines follow the table; a new worker runs the workloads after it),
not the end of the run; one that failed or took over ``--slow`` seconds is not run again in later rounds.

Run on a TPU machine where JAX (with libtpu) is installed, from the checkout's root (the morphax
workers get the checkout on their PYTHONPATH):

    python3 benchmarks/tpu.py --json tpu.json

(about eight minutes on a v5e). With libtpu installed morphax's default platform is the TPU, as
JAX's is; each worker reports its device, and the table's first line names both.

``--jax-python`` / ``--morphax-python`` name other interpreters (both default to the one running
this file); ``--only NAME`` (repeatable), ``--rounds N``, ``--quick`` (tiny sizes, for a CPU).
JAX is never a dependency of the project: only the JAX workers import it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import queue
import re
import runpy
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from jit_mlp import SIZES, init_params, make_step  # noqa: E402

LIBS = ("jax", "morphax")
PEAK_TFLOPS = 197.0  # TPU v5e, bf16
WORKLOADS = (
    "matmul",
    "mlp",
    "transformer",
    "cnn",
    "per-example",
    "call",
    "eager",
    "first-call",
    "first-call-warm",
    "transformer_lm",
)
# (comparison, bound): "<=" compares morphax / JAX times, ">=" morphax / JAX rates.
GOALS = {
    "matmul": (">=", 0.98),
    "mlp": ("<=", 1.0),
    "transformer": ("<=", 1.0),
    "cnn": ("<=", 1.0),
    "per-example": ("<=", 1.0),
    "call": ("<=", 1.0),
    "eager": ("<=", 1.0),
    "first-call": ("<=", 1.0),
    "first-call-warm": ("<=", 0.2),
    "transformer_lm": (">=", 1.0),
}
LM_MODULE = "morphax.examples.transformer_lm"
LM_IMPORTS = (
    "import morphax as jax",
    "import morphax.numpy as jnp",
    "from morphax.example_libraries import optimizers",
)


def sizes(quick):
    """The workloads' sizes: the full ones for an accelerator, tiny ones (``--quick``) for a CPU."""
    if quick:
        return {
            "matmul": 512,
            "mlp_batch": 128,
            "transformer": (2, 64, 64, 4),
            "cnn_batch": 64,
            "per_example_batch": 32,
            "lm_size": "small",
            "lm_steps": 5,
        }
    return {
        "matmul": 8192,
        "mlp_batch": 1024,
        "transformer": (16, 1024, 1024, 16),
        "cnn_batch": 256,
        "per_example_batch": 256,
        "lm_size": "large",
        "lm_steps": 100,  # a tenth of them wait for the loss (the progress line): more steps, a steadier rate
    }


def descriptions(s):
    b, t, d, h = s["transformer"]
    return {
        "matmul": f"matmul bf16 {s['matmul']}^3",
        "mlp": f"MLP SGD step, batch {s['mlp_batch']}, f32",
        "transformer": f"transformer block fwd+bwd bf16 b{b} s{t} d{d} h{h}",
        "cnn": f"CNN adam step (train.py), batch {s['cnn_batch']}",
        "per-example": f"per-example grads, MLP, batch {s['per_example_batch']}",
        "call": "jitted x + 1, (8,) f32, per call",
        "eager": "eager x + y, (8,) f32, per op",
        "first-call": "MLP step first call, empty cache",
        "first-call-warm": "MLP step first call, warm disk cache",
        "transformer_lm": f"transformer_lm --size {s['lm_size']} (tokens/s)",
    }


# ----------------------------------------------------------------------------------- worker


def measure(fn, min_time=0.2, repeat=5, budget=10.0):
    """Seconds per call of ``fn`` (which waits for its results): one warm-up call (compiles), then
    ``repeat`` timings of a loop of calls lasting about ``min_time`` each, fewer once ``budget``
    seconds are spent (a slow library still finishes). Best and median of the timings."""
    t0 = time.perf_counter()
    fn()
    warmup = time.perf_counter() - t0
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    number = max(1, int(min_time / max(one, 1e-9)))
    times, start = [], time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
        if time.perf_counter() - start > budget:
            break
    return {
        "seconds": min(times),
        "median": statistics.median(times),
        "number": number,
        "repeats": len(times),
        "warmup_s": warmup,
    }


def mlp_data(jax, batch, seed=0):
    rng = np.random.default_rng(seed)
    # float32: init_params divides by a NumPy float64 scalar, which NumPy 2 promotes to float64.
    params = [(w.astype(np.float32), b.astype(np.float32)) for w, b in init_params(rng)]
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], batch)]
    return jax.block_until_ready(jax.device_put((params, x, y)))


def stepping(jax, step, state, *args):
    """A call that runs ``state, value = step(state, *args)`` (the state carried over, as in a
    training loop) and waits; ``first`` holds the first call's value."""
    holder = {"state": state, "first": None}

    def call():
        new, value = step(holder["state"], *args)
        jax.block_until_ready((new, value))
        holder["state"] = new
        if holder["first"] is None:
            holder["first"] = float(value)

    return call, holder


def w_matmul(jax, jnp, s):
    n = s["matmul"]
    rng = np.random.default_rng(0)
    # Put as float32 and cast there: morphax's device_put refuses ml_dtypes' bfloat16 NumPy arrays.
    a, b = (
        jax.device_put(rng.standard_normal((n, n), dtype=np.float32)).astype(jnp.bfloat16) for _ in range(2)
    )
    a, b = jax.block_until_ready((a, b))
    f = jax.jit(lambda a, b: a @ b)
    out = measure(lambda: f(a, b).block_until_ready())
    out["tflops"] = 2 * n**3 / out["seconds"] / 1e12
    out["check"] = float(jnp.sum(f(a[:8], b[:, :8]).astype(jnp.float32)))
    return out


def w_mlp(jax, jnp, s):
    params, x, y = mlp_data(jax, s["mlp_batch"])
    step = jax.jit(make_step(jax))
    call, holder = stepping(jax, lambda p, x, y: step(p, x, y)[::-1], params, x, y)
    out = measure(call)
    out["check"] = holder["first"]
    return out


def w_transformer(jax, jnp, s):
    batch, seq, width, heads = s["transformer"]
    bf16 = jnp.bfloat16

    def layer_norm(x):
        x32 = x.astype(jnp.float32)
        mean = jnp.mean(x32, axis=-1, keepdims=True)
        var = jnp.mean((x32 - mean) ** 2, axis=-1, keepdims=True)
        return ((x32 - mean) * jax.lax.rsqrt(var + 1e-5)).astype(x.dtype)

    def block(params, x):
        wq, wk, wv, wo, w1, w2 = params
        h = layer_norm(x)

        def split(t):
            return t.reshape(batch, seq, heads, width // heads).transpose(0, 2, 1, 3)

        q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k).astype(jnp.float32) * (width // heads) ** -0.5
        probs = jax.nn.softmax(scores, axis=-1).astype(bf16)
        attn = jnp.einsum("bhqk,bhkd->bhqd", probs, v)
        x = x + attn.transpose(0, 2, 1, 3).reshape(batch, seq, width) @ wo
        return x + jax.nn.gelu(layer_norm(x) @ w1) @ w2

    def loss(params, x):
        return jnp.mean(block(params, x).astype(jnp.float32) ** 2)

    shapes = [(width, width)] * 4 + [(width, 4 * width), (4 * width, width)]

    @jax.jit
    def make(key):
        keys = jax.random.split(key, len(shapes) + 1)
        params = [(jax.random.normal(k, sh) * sh[0] ** -0.5).astype(bf16) for k, sh in zip(keys, shapes)]
        return params, jax.random.normal(keys[-1], (batch, seq, width)).astype(bf16)

    params, x = jax.block_until_ready(make(jax.random.PRNGKey(0)))
    f = jax.jit(jax.value_and_grad(loss))
    out = measure(lambda: jax.block_until_ready(f(params, x)))
    out["check"] = float(f(params, x)[0])
    return out


def w_cnn(jax, jnp, s):
    import importlib

    stax = importlib.import_module(jax.__name__ + ".example_libraries.stax")
    optimizers = importlib.import_module(jax.__name__ + ".example_libraries.optimizers")
    init, apply = stax.serial(
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
    opt_init, opt_update, get_params = optimizers.adam(3e-3)
    state = jax.jit(lambda key: opt_init(init(key, (-1, 8, 8, 1))[1]))(jax.random.PRNGKey(0))
    batch = s["cnn_batch"]
    rng = np.random.default_rng(0)
    x = (rng.integers(0, 17, (batch, 8, 8, 1)) / 16.0).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    state, x, y = jax.block_until_ready((state, *jax.device_put((x, y))))

    def loss(params, x, y):
        logp = apply(params, x)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    @jax.jit
    def step(i, state, x, y):
        value, grads = jax.value_and_grad(loss)(get_params(state), x, y)
        return opt_update(i, grads, state), value

    call, holder = stepping(jax, lambda st, x, y: step(0, st, x, y), state, x, y)
    out = measure(call)
    out["check"] = holder["first"]
    return out


def w_per_example(jax, jnp, s):
    params, x, y = mlp_data(jax, s["per_example_batch"])

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        logits = x @ w + b
        return -jnp.sum((logits - jax.nn.logsumexp(logits)) * y)

    f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    out = measure(lambda: jax.block_until_ready(f(params, x, y)))
    out["check"] = float(jnp.sum(jnp.abs(f(params, x, y)[-1][0])))
    return out


def w_call(jax, jnp, s):
    x = jax.device_put(np.arange(8, dtype=np.float32)).block_until_ready()
    f = jax.jit(lambda x: x + 1)
    out = measure(lambda: f(x).block_until_ready())
    out["check"] = float(jnp.sum(f(x)))
    return out


def w_eager(jax, jnp, s):
    x, y = jax.block_until_ready(jax.device_put((np.arange(8, dtype=np.float32), np.ones(8, np.float32))))
    out = measure(lambda: (x + y).block_until_ready())
    out["check"] = float(jnp.sum(x + y))
    return out


def w_first_call(jax, jnp, s):
    params, x, y = mlp_data(jax, s["mlp_batch"])
    step = jax.jit(make_step(jax))
    t0 = time.perf_counter()
    value, new = step(params, x, y)
    jax.block_until_ready((value, new))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(step(params, x, y))
    return {"seconds": first, "second_call_s": time.perf_counter() - t0, "check": float(value)}


def w_transformer_lm(jax, jnp, s, source):
    """Run the example (morphax: the module; JAX: the port at ``source``) in this process, its
    output captured (and echoed to stderr); tokens/s is its last line."""
    # No sample: generating text is no part of the training throughput.
    argv = ["transformer_lm", "--size", s["lm_size"], "--steps", str(s["lm_steps"]), "--sample-chars", "0"]
    captured = io.StringIO()
    saved = sys.argv
    sys.argv = argv
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(captured):
            try:
                if source:
                    runpy.run_path(source, run_name="__main__")
                else:
                    runpy.run_module(LM_MODULE, run_name="__main__", alter_sys=True)
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise RuntimeError(f"transformer_lm exited with status {e.code}") from None
    finally:
        sys.argv = saved
        sys.stderr.write(captured.getvalue())
    text = captured.getvalue()
    found = re.findall(r"^tokens/s:\s*([0-9.eE+-]+)\s*$", text, re.M)
    if not found:
        raise RuntimeError("transformer_lm printed no 'tokens/s: <number>' line")
    return {"tokens_per_s": float(found[-1]), "wall_s": time.perf_counter() - t0, "argv": argv[1:]}


WORKERS = {
    "matmul": w_matmul,
    "mlp": w_mlp,
    "transformer": w_transformer,
    "cnn": w_cnn,
    "per-example": w_per_example,
    "call": w_call,
    "eager": w_eager,
    "first-call": w_first_call,
    "first-call-warm": w_first_call,
}


STEADY = ("matmul", "mlp", "transformer", "cnn", "per-example", "call", "eager")


def worker_main(args):
    """Run ``args.workload`` (one or more) in this process, one JSON line each as it finishes."""
    t0 = time.perf_counter()
    if args.worker == "jax":
        import jax
        import jax.numpy as jnp
    else:
        import morphax as jax
        import morphax.numpy as jnp

        if all(w in STEADY for w in args.workload):
            # Steady state measures compiled programs: build them before the first call returns.
            with contextlib.suppress(Exception):
                jax.config.update("morphax_compile_in_background", False)
    import_s = time.perf_counter() - t0
    s = sizes(args.quick)
    s.update({k: v for k, v in (("lm_size", args.lm_size), ("lm_steps", args.lm_steps)) if v})
    other = "morphax" if args.worker == "jax" else "jax"
    for name in args.workload:
        print(f"[{args.worker} worker] {name}", file=sys.stderr, flush=True)
        try:
            if name == "transformer_lm":
                out = w_transformer_lm(jax, jnp, s, args.source)
            else:
                out = WORKERS[name](jax, jnp, s)
            if other in sys.modules:
                raise RuntimeError(f"the {args.worker} worker imported {other}")
            device = jax.devices()[0]
            out.update(
                version=jax.__version__,
                device=str(device),
                device_kind=getattr(device, "device_kind", "?"),
                platform=getattr(device, "platform", "?"),
                backend=jax.default_backend(),
                import_s=import_s,
            )
        except Exception as e:  # noqa: BLE001 -- reported in the table; the next workload runs
            text = traceback.format_exc()
            sys.stderr.write(text)
            out = {"error": f"{type(e).__name__}: {e}"}
        out.update(lib=args.worker, workload=name)
        print(json.dumps(out), flush=True)
    sys.stderr.flush()
    # What a normal exit waits for (morphax writes compiled programs to its disk cache from a
    # thread of its own); then skip the interpreter's and the runtime's teardown (seconds on a
    # TPU): all is reported.
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    os._exit(0)


# ----------------------------------------------------------------------------------- parent


def worker_env(lib, cache=None):
    env = dict(os.environ)
    if lib == "jax":
        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"  # JAX's default: no persistent cache
    else:
        if os.path.isfile(os.path.join(REPO, "morphax", "__init__.py")):
            env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
        if cache:
            env["MORPHAX_CACHE_DIR"] = cache
    return env


def _tail(text, lines=8):
    return "\n".join((text or "").strip().splitlines()[-lines:])


def _error_line(stderr):
    """The line of ``stderr`` that names the exception (else its last line)."""
    lines = (stderr or "").strip().splitlines()
    for line in reversed(lines):
        if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b", line):
            return line.strip()
    return lines[-1].strip() if lines else ""


def _segment(stderr, lib, workload):
    """What the worker wrote to stderr while it ran ``workload`` (from its marker line on)."""
    marker = f"[{lib} worker] {workload}\n"
    start = stderr.rfind(marker)
    if start < 0:
        return stderr
    end = stderr.find(f"[{lib} worker] ", start + len(marker))
    return stderr[start + len(marker) : end if end >= 0 else None]


def _reader(stream, put):
    for line in stream:
        put(line)
    put(None)


def run_process(args, lib, workloads, cache=None, source=None):
    """One worker process running ``workloads`` in order: (their records so far, None) or, when
    it died or a workload outlived ``--timeout``, (the records it gave, why it stopped)."""
    python = args.jax_python if lib == "jax" else args.morphax_python
    cmd = [python, os.path.abspath(__file__), "--worker", lib]
    for w in workloads:
        cmd += ["--workload", w]
    if args.quick:
        cmd.append("--quick")
    if source:
        cmd += ["--source", source]
    if args.lm_size:
        cmd += ["--lm-size", args.lm_size]
    if args.lm_steps:
        cmd += ["--lm-steps", str(args.lm_steps)]
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=worker_env(lib, cache),
            start_new_session=True,  # its own process group: a timeout ends its children too
        )
    except OSError as e:
        return [], f"cannot start {python}: {e}", ""
    lines, err = queue.Queue(), []
    threads = [
        threading.Thread(target=_reader, args=(proc.stdout, lines.put), daemon=True),
        threading.Thread(target=_reader, args=(proc.stderr, err.append), daemon=True),
    ]
    for t in threads:
        t.start()
    records, why, last = [], None, time.perf_counter()
    while len(records) < len(workloads):
        try:
            line = lines.get(timeout=max(0.0, last + args.timeout - time.perf_counter()))
        except queue.Empty:
            why = f"timed out after {args.timeout:g} s"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            break
        if line is None:
            break
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                rec = json.loads(line)
                now = time.perf_counter()
                rec["wall_s"], last = now - last, now  # the first one includes the start
                records.append(rec)
    proc.wait()
    for t in threads:
        t.join(timeout=5)
    stderr = "".join(line for line in err if line is not None)
    if why is None and len(records) < len(workloads):
        why = _error_line(stderr) or f"exit status {proc.returncode}"
    return records, why, stderr


def run_worker(args, lib, workloads, cache=None, source=None):
    """Records of ``workloads`` for ``lib``: a worker runs them all; where one dies or hangs, that
    workload is reported as an error and a new worker runs the rest."""
    out, pending, retried = [], list(workloads), False
    while pending:
        records, why, stderr = run_process(args, lib, pending, cache, source)
        if (
            why
            and not records
            and not retried
            and lib == "jax"
            and re.search(r"lockfile|already in use", stderr)
        ):
            retried = True
            time.sleep(5)  # the chip can refuse a process started just after another ended
            continue
        for rec in records:
            if "error" in rec:
                rec["stderr"] = _tail(_segment(stderr, lib, rec["workload"]), 12)
            out.append(rec)
            pending.remove(rec["workload"])
        if why:
            dead = pending.pop(0)
            text = _tail(_segment(stderr, lib, dead), 12)
            out.append({"lib": lib, "workload": dead, "error": why, "stderr": text, "wall_s": None})
    for rec in out:
        if "error" in rec:
            print(f"  {rec['workload']} [{lib}]: FAILED ({rec['error']})", file=sys.stderr, flush=True)
        else:
            value = (
                f"{rec['tokens_per_s']:.0f} tokens/s" if "tokens_per_s" in rec else fmt_time(rec["seconds"])
            )
            print(
                f"  {rec['workload']} [{lib}]: {value} ({rec['wall_s']:.1f} s)", file=sys.stderr, flush=True
            )
    return out


def lm_port(args, tmp):
    """(path of the JAX port of transformer_lm, None) or (None, why not)."""
    try:
        found = subprocess.run(
            [args.morphax_python, "-c",
             f"import importlib.util as u; s = u.find_spec({LM_MODULE!r}); print(s.origin if s else '')"],
            capture_output=True, text=True, env=worker_env("morphax"), timeout=120,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, "error: finding the module timed out"
    origin = found.stdout.strip().splitlines()[-1] if found.stdout.strip() else ""
    if found.returncode != 0 or not origin:
        return None, "not available"
    with open(origin) as fh:
        lines = fh.read().splitlines(keepends=True)
    missing = [i for i in LM_IMPORTS if i not in {ln.strip() for ln in lines}]
    if missing:
        return None, f"error: no line {missing[0]!r} to port"
    port = [ln.replace("morphax", "jax") if ln.strip() in LM_IMPORTS else ln for ln in lines]
    left = [ln.strip() for ln in port if re.match(r"\s*(import|from)\s+morphax\b", ln)]
    if left:
        return None, f"error: the JAX port would still import morphax ({left[0]!r})"
    tmp = os.path.join(tmp, "port")
    os.mkdir(tmp)
    path = os.path.join(tmp, "transformer_lm_jax.py")
    with open(path, "w") as fh:
        fh.writelines(port)
    # What the example reads beside itself (its data/ folder) is beside the port too.
    here = os.path.dirname(origin)
    for name in os.listdir(here):
        if not name.endswith((".py", ".pyc")) and name != "__pycache__":
            os.symlink(os.path.join(here, name), os.path.join(tmp, name))
    return path, None


def run_all(args, selected):
    """{workload: {lib: [records]}} over the rounds, and {workload: note} for rows not run."""
    tmp = tempfile.mkdtemp(prefix="morphax-tpu-bench-")
    try:
        return _run_all(args, selected, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_all(args, selected, tmp):
    results = {w: {lib: [] for lib in LIBS} for w in selected}
    skipped = {}
    steady_cache = os.path.join(tmp, "cache")  # the morphax steady-state workers share one
    source = None
    if "transformer_lm" in selected:
        source, why = lm_port(args, tmp)
        if source is None:
            skipped["transformer_lm"] = why

    def again(w, lib):
        done = results[w][lib] if w in selected else None
        return w in selected and (not done or not any("error" in d or d["wall_s"] > args.slow for d in done))

    def keep(w, lib, recs):
        for rec in recs:
            results[w][lib].append(rec)

    steady = [w for w in selected if w in STEADY]
    first = [w for w in ("first-call", "first-call-warm") if w in selected]
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}", file=sys.stderr, flush=True)
        for group in [[w] for w in steady] if args.separate else [steady] if steady else []:
            for lib in LIBS:
                todo = [w for w in group if again(w, lib)]
                if todo:
                    for rec in run_worker(args, lib, todo, cache=steady_cache):
                        keep(rec["workload"], lib, [rec])
        if first and again(first[0], "jax"):
            # JAX's first call, without a persistent cache, is the JAX column of both rows.
            keep(first[0], "jax", run_worker(args, "jax", ["first-call"]))
        if first and (again("first-call", "morphax") or again("first-call-warm", "morphax")):
            # A fresh cache directory: the first process finds it empty, the second warm.
            cache = tempfile.mkdtemp(dir=tmp)
            cold = run_worker(args, "morphax", ["first-call"], cache=cache)[0]
            if "first-call" in selected:
                keep("first-call", "morphax", [cold])
            if "first-call-warm" in selected:
                if "error" in cold:
                    warm = dict(cold, workload="first-call-warm")
                else:
                    warm = run_worker(args, "morphax", ["first-call-warm"], cache=cache)[0]
                    warm["cold_s"] = cold["seconds"]
                keep("first-call-warm", "morphax", [warm])
        if "transformer_lm" in selected and "transformer_lm" not in skipped and r < args.lm_rounds:
            for lib in LIBS:
                if again("transformer_lm", lib):
                    src = source if lib == "jax" else None
                    keep(
                        "transformer_lm",
                        lib,
                        run_worker(args, lib, ["transformer_lm"], cache=steady_cache, source=src),
                    )
    if first == ["first-call", "first-call-warm"]:
        results["first-call-warm"]["jax"] = results["first-call"]["jax"]
    return results, skipped


# ----------------------------------------------------------------------------------- report


def fmt_time(t):
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def best(records, workload):
    """The record a row reports, or None: of the rounds' successful records (each already its
    process's best of five timings), the median one (the lower middle of an even count). One round
    is not enough on a TPU: a process's timings of the small rows differ from the next process's
    by up to 5% for either library, so the best of rounds reports the luckiest process rather than
    the library."""
    ok = [r for r in records if "error" not in r]
    if not ok:
        return None
    if workload == "transformer_lm":
        ranked = sorted(ok, key=lambda r: -r["tokens_per_s"])
    else:
        ranked = sorted(ok, key=lambda r: r["seconds"])
    return ranked[(len(ranked) - 1) // 2]


def spread(records, workload):
    """'lo-hi' over the rounds' successful records (the row's noise), or '' for fewer than two."""
    ok = [r for r in records if "error" not in r]
    if len(ok) < 2:
        return ""
    if workload == "transformer_lm":
        values = sorted(r["tokens_per_s"] for r in ok)
        return f"{values[0]:.0f}-{values[-1]:.0f} tokens/s"
    if workload == "matmul":
        values = sorted(r["tflops"] for r in ok)
        return f"{values[0]:.1f}-{values[-1]:.1f} TFLOP/s"
    values = sorted(r["seconds"] for r in ok)
    return f"{fmt_time(values[0])}-{fmt_time(values[-1])}"


def cell(rec, records, workload):
    if rec is None:
        errs = [r for r in records if "error" in r]
        if not errs:
            return "-"
        return "error: " + re.sub(r"\s+", " ", errs[0]["error"]).replace("|", "/")[:120]
    if workload == "matmul":
        text = f"{rec['tflops']:.2f} TFLOP/s"
        if "TPU" in rec.get("device_kind", ""):
            text += f" ({rec['tflops'] / PEAK_TFLOPS:.0%} of peak)"
        return text
    if workload == "transformer_lm":
        return f"{rec['tokens_per_s']:.0f} tokens/s"
    return fmt_time(rec["seconds"])


def ratio_of(workload, m, j):
    if m is None or j is None:
        return None
    if workload == "matmul":
        return m["tflops"] / j["tflops"]
    if workload == "transformer_lm":
        return m["tokens_per_s"] / j["tokens_per_s"]
    return m["seconds"] / j["seconds"]


def devices_line(results):
    seen = {}
    for per_lib in results.values():
        for lib, records in per_lib.items():
            for r in records:
                if "device_kind" in r:
                    seen.setdefault(lib, f"{lib} {r['version']} on {r['device_kind']} ({r['platform']})")
    return "; ".join(seen[lib] for lib in LIBS if lib in seen) or "no worker reported a device"


def report(args, results, skipped, desc):
    lines = [
        f"Devices: {devices_line(results)}. Median of {args.rounds} round(s), each a fresh "
        "process's best of five timings.",
        "",
    ]
    lines.append("| workload | morphax | JAX | morphax/JAX | goal |")
    lines.append("|---|---|---|---|---|")
    rows, notes, failures = [], [], []
    for w in results:
        op, bound = GOALS[w]
        goal = f"{op} {bound}"
        if w in skipped:
            lines.append(f"| {desc[w]} | {skipped[w]} | {skipped[w]} | - | {goal} |")
            rows.append({"workload": w, "skipped": skipped[w]})
            continue
        m, j = (best(results[w][lib], w) for lib in ("morphax", "jax"))
        ratio = ratio_of(w, m, j)
        if ratio is not None:
            met = ratio <= bound if op == "<=" else ratio >= bound
            goal += " (met)" if met else " (missed)"
        ratio_text = f"{ratio:.2f}" if ratio is not None else "-"
        lines.append(
            f"| {desc[w]} | {cell(m, results[w]['morphax'], w)} | {cell(j, results[w]['jax'], w)} "
            f"| {ratio_text} | {goal} |"
        )
        rows.append({"workload": w, "morphax": m, "jax": j, "ratio": ratio, "goal": [op, bound]})
        for lib in LIBS:
            failures += [(w, lib, r) for r in results[w][lib] if "error" in r]
        ranges = [
            f"{lib} {spread(results[w][lib], w)}" for lib in ("morphax", "jax") if spread(results[w][lib], w)
        ]
        if ranges:
            notes.append(f"{w}: range over rounds: " + ", ".join(ranges))
        if m is not None and j is not None and "check" in m and "check" in j:
            notes.append(f"{w}: check value morphax {m['check']:.6g}, JAX {j['check']:.6g}")
        if w == "first-call-warm" and m is not None and "cold_s" in m:
            notes.append(f"{w}: morphax's cache-filling first process took {fmt_time(m['cold_s'])}")
        if w.startswith("first-call"):
            for lib, rec in (("morphax", m), ("jax", j)):
                if rec is not None:
                    notes.append(
                        f"{w} [{lib}]: import {fmt_time(rec['import_s'])} (not counted), "
                        f"second call {fmt_time(rec['second_call_s'])}"
                    )
    lines.append("")
    lines += notes
    seen = set()
    for _, lib, r in failures:
        if id(r) not in seen:  # first-call-warm shares JAX's records with first-call
            seen.add(id(r))
            lines += ["", f"{r['workload']} [{lib}] failed: {r['error']}"]
            lines += ["    " + ln for ln in r["stderr"].splitlines()]
    print("\n".join(lines), flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a CPU check)")
    parser.add_argument(
        "--only", choices=WORKLOADS, action="append", help="run only this workload (repeatable)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per library (3)")
    parser.add_argument("--json", metavar="OUT", help="write every worker's raw result to OUT")
    parser.add_argument("--jax-python", default=sys.executable, help="interpreter of the JAX workers")
    parser.add_argument("--morphax-python", default=sys.executable, help="interpreter of the morphax workers")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a worker may run (300)")
    parser.add_argument(
        "--slow",
        type=float,
        default=120.0,
        help="a worker slower than this many seconds is not run again (120)",
    )
    parser.add_argument("--lm-size", help="transformer_lm's --size (large; --quick: small)")
    parser.add_argument("--lm-steps", type=int, help="transformer_lm's --steps (100; --quick: 5)")
    parser.add_argument(
        "--lm-rounds",
        type=int,
        default=1,
        help="rounds that run transformer_lm (1: it averages 100 steps itself)",
    )
    parser.add_argument(
        "--separate",
        action="store_true",
        help="a fresh process per steady-state workload (default: one per round)",
    )
    parser.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    parser.add_argument("--workload", choices=WORKLOADS, action="append", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args)
        return
    selected = [w for w in WORKLOADS if not args.only or w in args.only]
    t0 = time.perf_counter()
    results, skipped = run_all(args, selected)
    s = sizes(args.quick)
    s.update({k: v for k, v in (("lm_size", args.lm_size), ("lm_steps", args.lm_steps)) if v})
    print(f"({time.perf_counter() - t0:.0f} s in all)\n", file=sys.stderr)
    rows = report(args, results, skipped, descriptions(s))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {"args": vars(args), "rows": rows, "results": results, "skipped": skipped}, fh, indent=1
            )


if __name__ == "__main__":
    main()
