"""Eager calls, morphax against JAX 0.10.2 in the same run (issue 34): the library functions
users call outside `jit` (samplers, initializers, reductions, activations) and single operations
on small arrays, in steady state (each call warmed up first; morphax builds its compiled programs
before the first call returns, `morphax_compile_in_background` off).

Each library runs in its own fresh processes, interleaved (JAX, morphax, JAX, ... for `--rounds`);
a row reports each library's median round, a round being its process's best of five timing loops
of at least 0.1 s. The ratio is morphax time / JAX time; the goal of every row is <= 1.0, except
`x + y` and `sin(x)`, whose goal is within 2x of the NumPy call they wrap (reported as
morphax / NumPy).

    python benchmarks/eager.py --jax-python /path/to/venv-with-jax/bin/python

Without `--jax-python` the JAX column is measured with this interpreter if it can import jax,
and left out otherwise. JAX is never a dependency of the project: only its workers import it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rows(jax, jnp):
    rng = np.random.default_rng(0)
    key = jax.random.PRNGKey(0)
    big = jnp.asarray(rng.standard_normal((1000, 1000)).astype(np.float32))
    x8 = jnp.asarray(np.arange(8, dtype=np.float32))
    y8 = jnp.asarray(np.ones(8, np.float32))
    init = jax.nn.initializers.glorot_normal()
    return {
        "random.normal (1000,)": lambda: jax.random.normal(key, (1000,)),
        "random.normal (10**6,)": lambda: jax.random.normal(key, (10**6,)),
        "random.normal (10**7,)": lambda: jax.random.normal(key, (10**7,)),
        "random.uniform (10**6,)": lambda: jax.random.uniform(key, (10**6,)),
        "random.split(key, 1000)": lambda: jax.random.split(key, 1000),
        "glorot_normal (784, 512)": lambda: init(key, (784, 512)),
        "linalg.norm (1000, 1000)": lambda: jnp.linalg.norm(big),
        "var(axis=0) (1000, 1000)": lambda: jnp.var(big, axis=0),
        "nn.softmax (1000, 1000)": lambda: jax.nn.softmax(big),
        "nn.logsumexp (1000, 1000)": lambda: jax.nn.logsumexp(big),
        "nn.gelu (1000, 1000)": lambda: jax.nn.gelu(big),
        "x + y (8,)": lambda: x8 + y8,
        "sin(x) (8,)": lambda: jnp.sin(x8),
        "x[3] (8,)": lambda: x8[3],
        "x.at[2].set(5.0) (8,)": lambda: x8.at[2].set(5.0),
    }


def _numpy_rows():
    x8, y8 = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    return {"x + y (8,)": lambda: x8 + y8, "sin(x) (8,)": lambda: np.sin(x8)}


def _time(fn, wait):
    def call():
        wait(fn())

    call()
    call()
    t0 = time.perf_counter()
    call()
    one = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(0.1 / one))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def worker(lib):
    if lib == "jax":
        import jax
        import jax.numpy as jnp

        rows = _rows(jax, jnp)
        wait = jax.block_until_ready
    elif lib == "morphax":
        import morphax
        import morphax.numpy as jnp

        morphax.config.update("morphax_compile_in_background", False)
        rows = _rows(morphax, jnp)
        wait = morphax.block_until_ready
    else:
        rows, wait = _numpy_rows(), lambda x: x
    print(json.dumps({name: _time(fn, wait) for name, fn in rows.items()}), flush=True)


def _run(python, lib):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run(
        [python, os.path.abspath(__file__), "--worker", lib],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the {lib} worker failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt(t):
    return f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", choices=["jax", "morphax", "numpy"])
    parser.add_argument("--jax-python", help="an interpreter that imports jax (default: this one, if it can)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    jax_python = args.jax_python
    if jax_python is None:
        probe = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True)
        jax_python = sys.executable if probe.returncode == 0 else None
    libs = (["jax"] if jax_python else []) + ["morphax", "numpy"]
    runs = {lib: [] for lib in libs}
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}", file=sys.stderr, flush=True)
        for lib in libs:
            runs[lib].append(_run(jax_python if lib == "jax" else sys.executable, lib))
    median = {
        lib: {k: statistics.median_low([run[k] for run in rs]) for k in rs[0]} for lib, rs in runs.items()
    }
    print(f"Median of {args.rounds} rounds; morphax time / baseline time (lower is better).\n")
    print("| eager call | morphax | JAX | morphax/JAX | NumPy | goal |")
    print("|---|---|---|---|---|---|")
    for name, t in median["morphax"].items():
        j = median.get("jax", {}).get(name)
        n = median["numpy"].get(name)
        if n is not None:
            goal = f"<= 2x NumPy ({'met' if t <= 2 * n else 'missed'}: {t / n:.1f}x)"
        elif j is not None:
            goal = f"<= 1.0 ({'met' if t <= j else 'missed'})"
        else:
            goal = "<= 1.0"
        ratio = f"{t / j:.2f}" if j else "-"
        print(
            f"| {name} | {_fmt(t)} | {_fmt(j) if j else '-'} | {ratio} | {_fmt(n) if n else '-'} | {goal} |"
        )


if __name__ == "__main__":
    main()
