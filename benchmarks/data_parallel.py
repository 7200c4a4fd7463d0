"""Data-parallel training throughput (issue 17): the pmapped SGD step of
``morphax/examples/data_parallel.py`` (value_and_grad, ``lax.pmean`` of the gradients, momentum
update) on an MLP 784-512-512-10 with a global batch of 512 synthetic examples, run

- in one process on 1 device and on 2 devices (each device takes 256 rows), and
- under ``mpirun -n 2`` (one device per process, 256 rows each) against 1 process,

reported as throughput ratios (examples per second on 2 devices / on 1; the issue's goal on this
2-core machine is >= 1.5). Each configuration runs in a fresh process (the device count is fixed
at the first computation) with its thread pools set through the environment: "shared" gives each
device thread cores / devices BLAS and OpenMP threads (what the example does), "full" gives every
device all the cores (BLAS pools competing with the other devices' threads). The 1-device
baseline runs with both settings. A configuration's time is the best of ``--repeat`` timings of
``--steps`` steps after warm-up (C libraries built); "spread" is the slowest / best timing.
A control measures how much two threads can run at once on the machine at that moment (NumPy
matmuls on two threads vs one after the other): on a machine shared with other work, the ratios
cannot exceed it.

Run: ``python benchmarks/data_parallel.py [--steps 20] [--repeat 5] [--runs 3] [--no-mpi]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

SIZES = (784, 512, 512, 10)
BATCH = 512


def worker(steps, repeat):
    """One configuration (this process's devices, or this MPI process): print a JSON line of the
    per-step times."""
    import numpy as np

    from morphax.examples import data_parallel as dp

    rank, count, local = dp.setup(int(os.environ.get("BENCH_DEVICES", "1")))
    import morphax
    from morphax._src.compiler.backends.c import background

    total = local * count
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    mine = slice(rank * local, (rank + 1) * local)
    xs = x.reshape(total, BATCH // total, -1)[mine]
    ys = y.reshape(total, BATCH // total)[mine]
    train_step, _ = dp.make_train_step(lr=0.01)
    params = dp.init_params(SIZES)
    velocity = [(np.zeros_like(w), np.zeros_like(b)) for w, b in params]

    def run(n):
        nonlocal params, velocity
        for _ in range(n):
            params, velocity, value = train_step(params, velocity, xs, ys)
        morphax.block_until_ready((params, value))

    run(2)
    background.wait()  # time the native kernels, not the NumPy fallback of the first calls
    run(3)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(steps)
        times.append((time.perf_counter() - t0) / steps)
    if rank == 0:
        print(json.dumps({"devices": total, "processes": count, "times": times}), flush=True)
    if count > 1:
        morphax.distributed.shutdown()


def control(repeat):
    """How much two threads can run at once on this machine now: NumPy's half-batch forward
    matmuls of the MLP (one BLAS thread) twice in a row, then on two threads at once; prints the
    speed-up (2.0 on two idle cores; lower when other work holds a core)."""
    import threading

    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH // 2, SIZES[0])).astype(np.float32)
    ws = [rng.standard_normal((m, n)).astype(np.float32) for m, n in zip(SIZES[:-1], SIZES[1:])]

    def work(n=20):
        for _ in range(n):
            h = x
            for w in ws:
                h = np.tanh(h @ w)

    ratios = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        work()
        work()
        one = time.perf_counter() - t0
        threads = [threading.Thread(target=work) for _ in range(2)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ratios.append(one / (time.perf_counter() - t0))
    print(json.dumps({"times": ratios}), flush=True)


def _mpirun():
    beside = pathlib.Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.exists() else shutil.which("mpirun")


def _launch(devices, processes, threads, steps, repeat):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "PMIX_"))}
    env.update(
        BENCH_DEVICES=str(devices),
        OPENBLAS_NUM_THREADS=str(threads),
        OMP_NUM_THREADS=str(threads),
        PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[1]),
    )
    mode = "--control" if devices == 0 else "--worker"
    cmd = [sys.executable, __file__, mode, "--steps", str(steps), "--repeat", str(repeat)]
    if processes > 1:
        cmd = [_mpirun(), "-n", str(processes), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(lines[-1])["times"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="launches of each configuration")
    parser.add_argument("--no-mpi", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--control", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.steps, args.repeat)
    if args.control:
        return control(args.repeat)
    cores = os.cpu_count() or 1
    has_mpi = not args.no_mpi and _mpirun() is not None
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        has_mpi = False
    configs = {  # name -> (devices per process, processes, threads per device)
        "1 device, full threads": (1, 1, cores),
        "1 device, 1 thread": (1, 1, 1),
        "2 devices, shared threads": (2, 1, max(1, cores // 2)),
        "2 devices, full threads": (2, 1, cores),
    }
    if has_mpi:
        configs["2 processes, shared threads"] = (1, 2, max(1, cores // 2))
        configs["2 processes, full threads"] = (1, 2, cores)
    print(f"MLP {'-'.join(map(str, SIZES))}, global batch {BATCH}, {cores} cores; {args.runs} launches each")
    best = {name: [] for name in configs}
    spread = {name: [] for name in configs}
    controls = []
    for _ in range(args.runs):  # interleaved, so a burst of load elsewhere hits every configuration
        controls += _launch(0, 1, 1, args.steps, args.repeat)
        for name, (devices, processes, threads) in configs.items():
            times = _launch(devices, processes, threads, args.steps, args.repeat)
            best[name].append(min(times))
            spread[name].append(max(times) / min(times))
    print(f"{'configuration':30s} {'ms/step (per launch)':>28s} {'examples/s':>11s} {'spread':>7s}")
    for name in configs:
        ms = ", ".join(f"{1e3 * t:.1f}" for t in best[name])
        print(f"{name:30s} {ms:>28s} {BATCH / min(best[name]):11.0f} {max(spread[name]):7.2f}")
    print(
        f"control: NumPy matmuls on two threads at once vs in a row (one BLAS thread each): "
        f"{min(controls):.2f}-{max(controls):.2f}x (2.0 on two idle cores)"
    )
    print("throughput ratios (goal >= 1.5), range over launches (launch i against launch i):")
    for name in configs:
        if name.startswith("1 device"):
            continue
        for base in ("1 device, full threads", "1 device, 1 thread"):
            ratios = [b / t for b, t in zip(best[base], best[name])]
            print(f"  {name:30s} / {base:24s} {min(ratios):.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
    main()
