"""The acceptance workloads of the fused native CPU backend (issue 13), each as a ratio against JAX
(when installed) and NumPy, measured in the same run:

1. ``chain``: a fused elementwise chain of 10 ops (sin, mul, exp, add, tanh, mul, sub, mul, add,
   sqrt) over 1e7 float32, jitted (goal: morphax / JAX <= 0.5), plus the peak-RSS increase of one
   call (goal: morphax <= NumPy eager);
2. ``xent``: softmax cross-entropy of (4096, 1000) float32 logits with one-hot labels, jitted
   ``value_and_grad`` with respect to the logits (goal <= 1.0); ``xent-int`` is the same with
   integer labels (``take_along_axis``, a gather);
3. ``mlp``: one SGD step of the MLP 784-512-512-10 of ``benchmarks/jit_mlp.py``, batch 128
   (goal <= 0.9);
4. ``normal``: jitted ``random.normal(key, (10**7,))`` (goal <= 0.5), and whether its bits equal
   JAX's;
5. ``first-cold``: the first call (trace + compile + run) of the MLP step in a fresh process with an
   empty disk cache (goal <= 0.5);
6. ``first-warm``: the same in a fresh process whose disk cache a previous process filled
   (goal <= 0.1).

Steady-state times are the best of several repeats after a warm-up call, each call ending in
``block_until_ready``; the libraries take turns, one repeat each per round, so that other work
on a shared machine slows all of them alike; the "spread" column is median / best over the repeats (how noisy the run
was). morphax runs twice: ``backend="c"`` (the fused native kernels) and ``backend="numpy"`` (one
NumPy call per equation), so ``np-be/c`` is the speed-up the C backend brings.

First calls (5, 6) run in child processes (``sys.executable`` running this file): the child imports
the library (import time is reported but not counted), builds the inputs, then times the first
call of ``jit(step)`` including ``block_until_ready``. morphax children get
``MORPHAX_CACHE_DIR`` set to a new temporary directory (cold), or to one an earlier child filled
(warm). JAX children run with its persistent compilation cache off
(``JAX_ENABLE_COMPILATION_CACHE=false``), so both morphax rows are compared with JAX's cold first
call. Each is the best over ``--first-repeats`` children.

Peak RSS (1) is measured in one child process per library: the child builds the input, makes one
warm-up call (compiling, filling allocator pools) and drops its result, then resets the kernel's
peak-RSS mark (writing "5" to ``/proc/self/clear_refs``), reads ``VmRSS`` from
``/proc/self/status``, makes one call (keeping its output alive) and reads ``VmHWM``: the increase
is ``VmHWM - VmRSS``, output included (40 MB for every library). Where ``clear_refs`` is not
available the child falls back to the ``resource.getrusage`` ``ru_maxrss`` increase over its
first call (warm-up skipped), which the table then says.

Threads: by default every library uses what the environment gives it (printed in the header):
morphax's OpenMP kernels and OpenBLAS, NumPy's OpenBLAS and XLA's thread pool all see every core.
``--threads N`` pins all of them to N before anything is imported (OPENBLAS_NUM_THREADS,
OMP_NUM_THREADS, MORPHAX_NUM_THREADS and, for N = 1, XLA_FLAGS
``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``); the children inherit it.

Run: ``python benchmarks/native_backend.py [--quick] [--only NAME] [--threads N] [--explain]``. On
a small or shared machine use ``--threads 1``: two-thread BLAS next to other load makes single
timings swing by 10x or more (MLP step 3 ms to 110 ms, NumPy's included).
``--explain`` prints, for each morphax program, its number of fused kernels and the executor's
program (which steps are kernels, which are opaque NumPy calls).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from jit_mlp import BATCH, SIZES, init_params, make_step, numpy_step  # noqa: E402

CHAIN_N = 10_000_000
XENT_SHAPE = (4096, 1000)
NORMAL_N = 10_000_000
GOALS = {
    "chain": 0.5,
    "xent": 1.0,
    "xent-int": 1.0,
    "mlp": 0.9,
    "normal": 0.5,
    "first-cold": 0.5,
    "first-warm": 0.1,
}
WORKLOADS = ("chain", "xent", "xent-int", "mlp", "normal", "first-cold", "first-warm")


# ----------------------------------------------------------------------------------- workloads


def make_chain(xp):
    """10 elementwise ops, written once for every library (``xp`` is its NumPy namespace)."""

    def chain(x):
        y = xp.sin(x) * 1.5  # sin, mul
        y = xp.exp(y) + x  # exp, add
        y = xp.tanh(y) * 0.75 - x  # tanh, mul, sub
        return xp.sqrt(y * y + 1.0)  # mul, add, sqrt

    return chain


def make_xent(lib, integer_labels):
    jnp = lib.numpy

    if integer_labels:

        def loss(logits, labels):
            lse = lib.nn.logsumexp(logits, axis=1)
            picked = jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
            return jnp.mean(lse - picked)

    else:

        def loss(logits, onehot):
            logp = logits - lib.nn.logsumexp(logits, axis=1, keepdims=True)
            return -jnp.mean(jnp.sum(logp * onehot, axis=1))

    return lib.value_and_grad(loss)


def numpy_xent(logits, labels_onehot):
    """The same value and gradient by hand in NumPy (the eager baseline)."""
    m = logits.max(1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(1, keepdims=True)
    logp = logits - m - np.log(s)
    value = -np.mean(np.sum(logp * labels_onehot, 1))
    grad = (e / s - labels_onehot) / logits.shape[0]
    return value, grad


# ----------------------------------------------------------------------------------- timing


def interleaved(fns, repeat, min_time=0.05, settle=0.25):
    """{label: (best, median) seconds per call} of each callable in ``fns`` over ``repeat`` rounds,
    after a warm-up call of each. Each round times every callable once, one after the other
    (a repeat loops enough calls to last about ``min_time``), so that a burst of other work on a
    shared machine falls on all of them alike instead of on whichever was being timed then.
    Before each turn the process sleeps ``settle`` seconds: BLAS and XLA thread pools spin for a
    while after their last call (OpenBLAS about 0.1 s), and the next library must not run next to
    the previous one's spinning threads."""
    number = {}
    for label, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        number[label] = max(1, int(min_time / max(time.perf_counter() - t0, 1e-7)))
    times = {label: [] for label in fns}
    for _ in range(repeat):
        for label, fn in fns.items():
            time.sleep(settle)
            t0 = time.perf_counter()
            for _ in range(number[label]):
                fn()
            times[label].append((time.perf_counter() - t0) / number[label])
    return {label: (min(t), statistics.median(t)) for label, t in times.items()}


def blocked(lib, f, *args):
    """A call of ``f(*args)`` that waits for its results."""
    return lambda: lib.block_until_ready(f(*args))


def libraries(include_jax=True):
    """(label, lib module, jit) for morphax's two backends and JAX (when importable)."""
    import morphax

    # Steady-state timings measure the native kernels: compile before the first call returns
    # (the first-call rows run in child processes, with morphax's default background builds).
    morphax.config.update("morphax_compile_in_background", False)
    out = [
        ("morphax[c]", morphax, lambda f: morphax.jit(f, backend="c")),
        ("morphax[numpy]", morphax, lambda f: morphax.jit(f, backend="numpy")),
    ]
    if include_jax:
        try:
            import jax
        except ImportError:
            jax = None
        if jax is not None:
            out.append(("jax", jax, jax.jit))
    return out


def explain(label, jitted, *args):
    """Print the fused-kernel count and the executor's program of a morphax jitted function."""
    compiled = jitted.lower(*args).compile()
    text = compiled.as_text()
    marker = "# the program, run by the executor"
    program = text.split(marker, 1)[1] if marker in text else text
    print(f"--- {label}: {compiled.num_kernels} fused kernel(s); the executor's program:{program.rstrip()}\n")


def bench_chain(args, rows_out):
    x = np.random.default_rng(0).standard_normal(CHAIN_N).astype(np.float32)
    calls, outs = {}, {}
    for label, lib, jit in libraries(not args.no_jax):
        f = jit(make_chain(lib.numpy))
        xs = lib.numpy.asarray(x)
        calls[label] = blocked(lib, f, xs)
        outs[label] = np.asarray(f(xs))
        if args.explain and label == "morphax[c]":
            explain("chain", f, xs)
    chain_np = make_chain(np)
    calls["numpy"] = lambda: chain_np(x)
    times = interleaved(calls, args.repeat)
    ref = chain_np(x)
    check = max(float(np.max(np.abs(o - ref) / (np.abs(ref) + 1e-30))) for o in outs.values())
    rss = {}
    for label in ("morphax[c]", "morphax[numpy]", "numpy") + (() if args.no_jax else ("jax",)):
        lib, _, backend = label.partition("[")
        got = run_child({"kind": "rss", "lib": lib, "backend": backend.rstrip("]") or None})
        if got is not None:
            rss[label] = got
    note = f"max rel err vs numpy {check:.1e}"
    if rss:
        method = next(iter(rss.values()))["method"]
        note += "; peak RSS increase of one call (" + method + "): "
        note += ", ".join(f"{k} {v['mb']:.0f} MB" for k, v in rss.items())
        if "morphax[c]" in rss and "numpy" in rss:
            note += f" (morphax[c] / numpy {rss['morphax[c]']['mb'] / rss['numpy']['mb']:.2f}, goal <= 1.0)"
    rows_out.append(("chain", "elementwise chain 1e7 f32", times, note))


def bench_xent(args, rows_out, integer_labels):
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal(XENT_SHAPE) * 3).astype(np.float32)
    labels = rng.integers(0, XENT_SHAPE[1], XENT_SHAPE[0]).astype(np.int32)
    onehot = np.eye(XENT_SHAPE[1], dtype=np.float32)[labels]
    name = "xent-int" if integer_labels else "xent"
    calls, grads = {}, {}
    for label, lib, jit in libraries(not args.no_jax):
        f = jit(make_xent(lib, integer_labels))
        a = lib.numpy.asarray(logits)
        b = lib.numpy.asarray(labels if integer_labels else onehot)
        calls[label] = blocked(lib, f, a, b)
        grads[label] = np.asarray(f(a, b)[1])
        if args.explain and label == "morphax[c]":
            explain(name, f, a, b)
    calls["numpy"] = lambda: numpy_xent(logits, onehot)
    times = interleaved(calls, args.repeat)
    ref = numpy_xent(logits, onehot)[1]
    err = max(float(np.max(np.abs(g - ref))) / float(np.max(np.abs(ref))) for g in grads.values())
    desc = "softmax xent (4096,1000) v&g" + (" int" if integer_labels else "")
    rows_out.append((name, desc, times, f"max grad err / max|grad| vs numpy {err:.1e}"))


def mlp_data():
    rng = np.random.default_rng(0)
    # float32 weights: init_params divides by a NumPy float64 scalar, which NumPy 2 (NEP 50)
    # promotes to float64; the jitted libraries convert to float32, the NumPy baseline would not.
    params = [(w.astype(np.float32), b.astype(np.float32)) for w, b in init_params(rng)]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, y


def bench_mlp(args, rows_out):
    params, x, y = mlp_data()
    calls, values = {}, {}
    for label, lib, jit in libraries(not args.no_jax):
        step = jit(make_step(lib))
        p = [(lib.numpy.asarray(w), lib.numpy.asarray(b)) for w, b in params]
        xs, ys = lib.numpy.asarray(x), lib.numpy.asarray(y)
        calls[label] = blocked(lib, step, p, xs, ys)
        values[label] = float(step(p, xs, ys)[0])
        if args.explain and label == "morphax[c]":
            explain("mlp", step, p, xs, ys)
    calls["numpy"] = lambda: numpy_step(params, x, y)
    times = interleaved(calls, args.repeat)
    ref = float(numpy_step(params, x, y)[0])
    err = max(abs(v - ref) / abs(ref) for v in values.values())
    rows_out.append(("mlp", "MLP 784-512-512-10 SGD step b128", times, f"loss rel err vs numpy {err:.1e}"))


def bench_normal(args, rows_out):
    calls, bits = {}, {}
    for label, lib, jit in libraries(not args.no_jax):
        f = jit(lambda k, lib=lib: lib.random.normal(k, (NORMAL_N,)))
        key = lib.random.PRNGKey(0)
        calls[label] = blocked(lib, f, key)
        bits[label] = np.asarray(f(key)).view(np.uint32)
        if args.explain and label == "morphax[c]":
            explain("normal", f, key)
    rng = np.random.default_rng(0)
    calls["numpy"] = lambda: rng.standard_normal(NORMAL_N, dtype=np.float32)
    times = interleaved(calls, args.repeat)
    same_backends = np.array_equal(bits["morphax[c]"], bits["morphax[numpy]"])
    note = f"c == numpy-backend bits: {'yes' if same_backends else 'NO'}"
    if "jax" in bits:
        same = np.array_equal(bits["morphax[c]"], bits["jax"])
        note = f"bit-identical to JAX: {'yes' if same else 'NO'}; " + note
        if not same:
            note += f" ({int(np.count_nonzero(bits['morphax[c]'] != bits['jax']))} of {NORMAL_N} differ)"
    else:
        note = "bit-identical to JAX: n/a (JAX absent); " + note
    rows_out.append(("normal", "random.normal(key, (1e7,)) jit", times, note + "; numpy = default_rng"))


def bench_first(args, rows_out, which):
    """First MLP step in fresh processes: ``which`` is "first-cold" or "first-warm"."""
    times, notes = {}, []
    for backend in ("c", "numpy"):
        runs = []
        for _ in range(args.first_repeats):
            with tempfile.TemporaryDirectory(prefix="morphax-bench-cache-") as cache:
                spec = {"kind": "first", "lib": "morphax", "backend": backend, "cache": cache}
                if which == "first-warm":
                    run_child(spec)  # fills the cache
                got = run_child(spec)
            if got is not None:
                runs.append(got)
        if runs:
            times[f"morphax[{backend}]"] = _first_stats(runs)
            if backend == "c":
                r = min(runs, key=lambda r: r["first"])
                notes.append(
                    f"morphax[c] child: import {r['import'] * 1e3:.0f} ms, C compiles {r['compiles']}, "
                    f"disk hits {r['disk_hits']}, 2nd call {r['second'] * 1e3:.1f} ms"
                )
    if not args.no_jax:
        runs = [
            got
            for got in (run_child({"kind": "first", "lib": "jax"}) for _ in range(args.first_repeats))
            if got
        ]
        if runs:
            times["jax"] = _first_stats(runs)
            notes.append(f"jax: import {min(r['import'] for r in runs) * 1e3:.0f} ms, persistent cache off")
    desc = "MLP 1st call, fresh proc, " + ("empty cache" if which == "first-cold" else "warm cache")
    rows_out.append((which, desc, times, "; ".join(notes)))


def _first_stats(runs):
    firsts = [r["first"] for r in runs]
    return min(firsts), statistics.median(firsts)


# ----------------------------------------------------------------------------------- children


def run_child(spec):
    env = dict(os.environ)
    if spec.get("cache"):
        env["MORPHAX_CACHE_DIR"] = spec["cache"]
    if spec["lib"] == "jax":
        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
        env.setdefault("JAX_PLATFORMS", "cpu")
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        print(f"child {spec} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _status_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(field)


def child_main(spec):
    lib_name, backend = spec["lib"], spec.get("backend")
    t0 = time.perf_counter()
    if lib_name == "morphax":
        import morphax as lib

        def jit(f):
            return lib.jit(f, backend=backend)

    elif lib_name == "jax":
        import jax as lib

        lib.config.update("jax_enable_compilation_cache", False)
        jit = lib.jit
    else:
        lib, jit = None, None
    t_import = time.perf_counter() - t0
    if spec["kind"] == "rss":
        print(json.dumps(child_rss(lib, jit)))
    else:
        print(json.dumps(dict(child_first(lib, jit), **{"import": t_import})))


def child_rss(lib, jit):
    import resource

    x = np.random.default_rng(0).standard_normal(CHAIN_N).astype(np.float32)
    if lib is None:
        f = make_chain(np)

        def call():
            return f(x)

    else:
        f = jit(make_chain(lib.numpy))
        xs = lib.numpy.asarray(x)

        def call():
            return f(xs).block_until_ready()

    try:
        out = call()  # warm-up: compile, allocator pools
        del out
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current RSS
        before = _status_kb("VmRSS")
        out = call()
        peak = _status_kb("VmHWM")
        method = "VmHWM after clear_refs"
    except OSError:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = call()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        method = "ru_maxrss over the first call"
    del out
    return {"mb": (peak - before) / 1024, "method": method}


def child_first(lib, jit):
    params, x, y = mlp_data()
    step = jit(make_step(lib))
    p = [(lib.numpy.asarray(w), lib.numpy.asarray(b)) for w, b in params]
    xs, ys = lib.numpy.asarray(x), lib.numpy.asarray(y)
    lib.block_until_ready((p, xs, ys))
    t0 = time.perf_counter()
    lib.block_until_ready(step(p, xs, ys))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    lib.block_until_ready(step(p, xs, ys))
    second = time.perf_counter() - t0
    out = {"first": first, "second": second}
    if lib.__name__ == "morphax":
        from morphax._src.compiler.backends.c import build

        out.update(compiles=build.stats["compiles"], disk_hits=build.stats["disk_hits"])
    return out


# ----------------------------------------------------------------------------------- report


def fmt_time(t):
    if t is None:
        return f"{'-':>10s}"
    return f"{t * 1e3:10.2f}" if t < 10 else f"{t:9.1f}s"


def fmt_ratio(a, b):
    if a is None or b is None:
        return f"{'-':>7s}"
    return f"{a / b:7.2f}"


def print_table(rows):
    cols = ("morphax[c]", "morphax[numpy]", "jax", "numpy")
    print()
    print("times in ms (best of repeats); spread = median/best of morphax[c] and jax")
    head = f"{'workload':<34s}" + "".join(f"{c:>16s}" for c in cols)
    head += f"{'c/jax':>8s}{'goal':>7s}{'c/numpy':>8s}{'np-be/c':>8s}{'spread c,jax':>14s}"
    print(head)
    print("-" * len(head))
    for name, desc, times, _ in rows:
        t = {k: v[0] for k, v in times.items()}
        spread = ",".join(
            f"{times[k][1] / times[k][0]:.2f}" if k in times else "-" for k in ("morphax[c]", "jax")
        )
        line = f"{desc:<34s}" + "".join(f"{fmt_time(t.get(c)):>16s}" for c in cols)
        numpy_ok = name not in ("first-cold", "first-warm")
        line += fmt_ratio(t.get("morphax[c]"), t.get("jax")) + f"{'<= ' + str(GOALS[name]):>7s}"
        line += fmt_ratio(t.get("morphax[c]"), t.get("numpy") if numpy_ok else None)
        line += fmt_ratio(t.get("morphax[numpy]"), t.get("morphax[c]")) + f"{spread:>14s}"
        print(line)
    print()
    for name, _, _, note in rows:
        if note:
            print(f"{name}: {note}")


def thread_env():
    keys = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MORPHAX_NUM_THREADS", "XLA_FLAGS")
    return f"cores {os.cpu_count()}; " + ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in keys)


def pin_threads(n):
    """Re-run this script with every thread pool pinned to ``n`` (before numpy is imported)."""
    if os.environ.get("MORPHAX_BENCH_PINNED") == str(n):
        return
    env = dict(os.environ, MORPHAX_BENCH_PINNED=str(n))
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MORPHAX_NUM_THREADS"):
        env[k] = str(n)
    if n == 1:
        env["XLA_FLAGS"] = (
            env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        ).strip()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier)")
    parser.add_argument(
        "--only", choices=WORKLOADS, action="append", help="run only this workload (repeatable)"
    )
    parser.add_argument(
        "--repeat", type=int, default=None, help="repeats per steady-state timing (default 5)"
    )
    parser.add_argument(
        "--first-repeats", type=int, default=None, help="fresh processes per first call (default 3)"
    )
    parser.add_argument("--threads", type=int, default=None, help="pin BLAS, OpenMP and XLA threads to N")
    parser.add_argument("--no-jax", action="store_true", help="skip JAX even when installed")
    parser.add_argument(
        "--explain", action="store_true", help="print morphax's kernels and executor programs"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return
    if args.threads:
        pin_threads(args.threads)
    args.repeat = args.repeat or (2 if args.quick else 5)
    args.first_repeats = args.first_repeats or (1 if args.quick else 3)
    try:
        import jax

        jax_version = jax.__version__
    except ImportError:
        jax_version = None
        args.no_jax = True
    print(f"numpy {np.__version__}; jax {jax_version or 'not installed (JAX columns skipped)'}")
    print(thread_env())
    selected = args.only or WORKLOADS
    rows = []
    for name in WORKLOADS:
        if name not in selected:
            continue
        t0 = time.perf_counter()
        try:
            if name == "chain":
                bench_chain(args, rows)
            elif name in ("xent", "xent-int"):
                bench_xent(args, rows, name == "xent-int")
            elif name == "mlp":
                bench_mlp(args, rows)
            elif name == "normal":
                bench_normal(args, rows)
            else:
                bench_first(args, rows, name)
        except Exception as e:  # one failing workload (a backend mid-change) must not hide the rest
            print(f"  {name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        print(f"  {name}: measured in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print_table(rows)


if __name__ == "__main__":
    main()
