"""morphax on XLA's CPU plugin against JAX, which compiles with the same XLA (issue 31): what
morphax hands XLA should be as good as what JAX hands it. Timed in one process, same run:

- the MLP training step (784-512-512-10, batch 128), jitted;
- per-example gradients ``jit(vmap(grad(logistic loss)))``, 512 x 100;
- a CNN training step (32x28x28x1, two 3x3 convolutions, dense);
- a transformer block (batch 8, sequence 128, width 128, 4 heads), value and grad;
- the per-call cost of a jitted ``x + 1`` on an (8,) array (with its wait).

Columns: morphax with backend="xla" (StableHLO through the PJRT plugin) on inputs that live in
the plugin's memory (outputs of an xla program, which later programs read uncopied, as JAX's
inputs live on its device), the same on host NumPy inputs (copied in each call), morphax's C
backend, and JAX; the ratio is xla / jax, the goal 1.1 (1.0 for the call). Needs the plugin
(`pip install --no-deps lammps-jax-pjrt-cpu`) and, for the JAX column, JAX in the same
environment (a scratch venv: the project never depends on it).

Run: ``python benchmarks/xla_cpu.py [--quick] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from jit_mlp import init_params, make_step
from native_backend import blocked, interleaved, thread_env
from whole_programs import MAKERS

GOALS = {"mlp": 1.1, "per-example": 1.1, "cnn": 1.1, "transformer": 1.1, "call": 1.0}
DESCRIPTIONS = {
    "mlp": "MLP step, batch 128",
    "per-example": "jit(vmap(grad)) 512x100",
    "cnn": "CNN training step",
    "transformer": "transformer block value_and_grad",
    "call": "jitted x + 1, (8,), with wait",
}


def mlp(lib):
    rng = np.random.default_rng(0)
    params = init_params(rng)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    return make_step(lib), (params, x, y)


def call(lib):
    return (lambda x: x + 1), (np.arange(8, dtype=np.float32),)


WORKLOADS = {
    "mlp": mlp,
    "per-example": MAKERS["per-example"],
    "cnn": MAKERS["cnn"],
    "transformer": MAKERS["transformer"],
    "call": call,
}


def _host(lib, inputs):
    return lib.tree_util.tree_map(lib.numpy.asarray, inputs)


def _on_plugin(lib, inputs):
    """The inputs as outputs of an xla program: arrays in the plugin's memory, which later xla
    programs read without a copy (as JAX's arrays live on its device)."""
    arrays = _host(lib, inputs)
    return lib.jit(lambda t: lib.tree_util.tree_map(lambda a: a + 0, t), backend="xla")(arrays)


def libraries():
    """(label, library, jit, how the inputs are made)."""
    import morphax

    morphax.config.update("morphax_compile_in_background", False)
    out = [
        ("morphax[xla]", morphax, lambda f: morphax.jit(f, backend="xla"), _on_plugin),
        ("morphax[xla] host in", morphax, lambda f: morphax.jit(f, backend="xla"), _host),
        ("morphax[c]", morphax, lambda f: morphax.jit(f, backend="c"), _host),
    ]
    try:
        import jax
    except ImportError:
        return out
    return [*out, ("jax", jax, jax.jit, _host)]


def measure(name, repeat):
    """{label: best seconds per call}, the libraries' calls interleaved (a busy moment on a shared
    machine slows all of them alike)."""
    fns = {}
    for label, lib, jit, make in libraries():
        f, inputs = WORKLOADS[name](lib)
        fns[label] = blocked(lib, jit(f), *make(lib, inputs))
        fns[label]()  # compile
    return {label: best for label, (best, _) in interleaved(fns, repeat).items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=tuple(WORKLOADS), action="append")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    repeat = args.repeat or (3 if args.quick else 7)
    try:
        import jax

        print(f"jax {jax.__version__}; {thread_env()}")
    except ImportError:
        print(f"jax not installed: no JAX column; {thread_env()}")
    cols = ("morphax[xla]", "morphax[xla] host in", "morphax[c]", "jax")
    head = f"{'workload (ms)':<34s}" + "".join(f"{c:>21s}" for c in cols) + f"{'xla/jax':>9s}{'goal':>7s}"
    print(head)
    print("-" * len(head))
    for name in args.only or WORKLOADS:
        try:
            times = measure(name, repeat)
        except Exception as e:  # noqa: BLE001 -- one failing workload must not hide the rest
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        line = f"{DESCRIPTIONS[name]:<34s}" + "".join(
            f"{times[c] * 1e3:>21.3f}" if c in times else f"{'-':>21s}" for c in cols
        )
        if "jax" in times and "morphax[xla]" in times:
            line += f"{times['morphax[xla]'] / times['jax']:>9.2f}{GOALS[name]:>7.1f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
