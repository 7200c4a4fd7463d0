"""Data-parallel training throughput (issue 17): the pmapped SGD step of
``morphax/examples/data_parallel.py`` (value_and_grad, ``lax.pmean`` of the gradients, momentum
update) on an MLP 784-512-512-10 with a global batch of 512 synthetic examples, run

- in one process on 1 device and on 2 devices (each device takes 256 rows), and
- under ``mpirun -n 2`` (one device per process, 256 rows each) against 1 process,

reported as throughput ratios (examples per second on 2 devices / on 1; the issue's goal on this
2-core machine is >= 1.5). Each configuration is its own process (the device count is fixed at
the first computation). "shared" is morphax's default: each device of the machine gets cores /
devices BLAS and OpenMP threads (runtime/thread_pools.py); "full" sets OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS to the core count, as a user may, so every device's pools take all the cores and
compete with the other devices' threads. The 1-device baseline runs with all cores (the default)
and with one thread.

The machine is shared with other work whose load changes from second to second, so the
configurations are timed in interleaved rounds: every configuration's processes start once, warm
up (C libraries built) and wait; each round then asks each configuration in turn for the best of
``--repeat`` timings of ``--steps`` steps, so a round compares the configurations within a few
seconds of one another. Ratios are per round (range and median over rounds). A control, also
once per round, measures how much two threads can run at once at that moment (NumPy matmuls on
two threads vs one after the other; 2.0 on two idle cores): the ratios cannot exceed it.

Run: ``python benchmarks/data_parallel.py [--rounds 5] [--steps 20] [--repeat 3] [--no-mpi]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

SIZES = (784, 512, 512, 10)
BATCH = 512


def _commands(count):
    """The commands this process receives (the number of steps to time; 0 to stop): the first
    process reads them from stdin (mpirun forwards it there) and broadcasts them to the others,
    which wait without spinning, so an idle configuration leaves the cores to the one timed."""
    if count == 1:
        for line in sys.stdin:
            yield int(line)
        return
    import numpy as np
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    while True:
        box = np.zeros(1, np.int64)
        if world.Get_rank() == 0:
            line = sys.stdin.readline()
            box[0] = int(line) if line.strip() else 0
        request = world.Ibcast(box, root=0)
        while not request.Test():
            time.sleep(0.01)
        if box[0] == 0:
            return
        yield int(box[0])


def worker(repeat):
    """One configuration (this process's devices, or this MPI process): warm up, print a ready
    line, then for each command N print the best of `repeat` timings of N steps (seconds per
    step) as a JSON line."""
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
    if rank == 0:
        from morphax._src.compiler.backends.c import blas

        print(json.dumps({"ready": True, "blas_threads": blas.thread_count()}), flush=True)
    for steps in _commands(count):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run(steps)
            times.append((time.perf_counter() - t0) / steps)
        if rank == 0:
            print(json.dumps({"best": min(times), "spread": max(times) / min(times)}), flush=True)
    if count > 1:
        morphax.distributed.shutdown()


def control(repeat):
    """How much two threads can run at once on this machine now: NumPy's half-batch forward
    matmuls of the MLP (one BLAS thread) twice in a row, then on two threads at once; for each
    command prints the best speed-up of `repeat` tries (2.0 on two idle cores; lower when other
    work holds a core)."""
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

    print(json.dumps({"ready": True}), flush=True)
    for _ in _commands(1):
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
        print(json.dumps({"best": max(ratios), "spread": max(ratios) / min(ratios)}), flush=True)


def _mpirun():
    beside = pathlib.Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.exists() else shutil.which("mpirun")


class _Configuration:
    """The processes of one configuration, started once and asked for timings round by round."""

    def __init__(self, devices, processes, threads, repeat):
        chosen = ("OMPI_", "PMI_", "PMIX_", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MORPHAX_NUM_THREADS")
        env = {k: v for k, v in os.environ.items() if not k.startswith(chosen)}
        env.update(BENCH_DEVICES=str(devices), PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[1]))
        if threads is not None:  # None: morphax's own sizing
            env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        mode = "--control" if devices == 0 else "--worker"
        self.cmd = [sys.executable, __file__, mode, "--repeat", str(repeat)]
        if processes > 1:
            self.cmd = [_mpirun(), "-n", str(processes), *self.cmd]
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def _reply(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait(timeout=60)
                raise RuntimeError(f"{' '.join(self.cmd)} failed:\n{self.proc.stderr.read()}")
            if line.startswith("{"):
                return json.loads(line)

    def ready(self) -> dict:
        return self._reply()

    def time(self, steps) -> dict:
        self.proc.stdin.write(f"{steps}\n")
        self.proc.stdin.flush()
        return self._reply()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("0\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-mpi", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--control", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.repeat)
    if args.control:
        return control(args.repeat)
    cores = os.cpu_count() or 1
    has_mpi = not args.no_mpi and _mpirun() is not None
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        has_mpi = False
    configs = {  # name -> (devices per process, processes, threads per device; None: morphax's default)
        "1 device, full threads": (1, 1, None),
        "1 device, 1 thread": (1, 1, 1),
        "2 devices, shared threads": (2, 1, None),
        "2 devices, full threads": (2, 1, cores),
    }
    if has_mpi:
        configs["2 processes, shared threads"] = (1, 2, None)
        configs["2 processes, full threads"] = (1, 2, cores)
    print(
        f"MLP {'-'.join(map(str, SIZES))}, global batch {BATCH}, {cores} cores; {args.rounds} interleaved "
        f"rounds, each the best of {args.repeat} timings of {args.steps} steps"
    )
    running = {"control": _Configuration(0, 1, 1, args.repeat)}
    pools = {}  # configuration -> the BLAS threads of each device (of process 0)
    try:
        # One at a time, so the C builds of one do not slow the warm-up of another.
        for name, (devices, processes, threads) in configs.items():
            running[name] = _Configuration(devices, processes, threads, args.repeat)
            pools[name] = running[name].ready().get("blas_threads")
        running["control"].ready()
        best = {name: [] for name in running}
        spread = {name: [] for name in running}
        for _ in range(args.rounds):
            for name, config in running.items():
                reply = config.time(args.steps)
                best[name].append(reply["best"])
                spread[name].append(reply["spread"])
                time.sleep(0.3)  # idle thread pools (OpenBLAS, OpenMP) stop spinning
    finally:
        for config in running.values():
            config.stop()
    print(
        f"{'configuration':30s} {'BLAS threads':>12s} {'ms/step (per round)':>40s} {'examples/s':>11s} {'spread':>7s}"
    )
    for name in configs:
        ms = ", ".join(f"{1e3 * t:.1f}" for t in best[name])
        threads = "?" if pools[name] is None else str(pools[name])
        print(f"{name:30s} {threads:>12s} {ms:>40s} {BATCH / min(best[name]):11.0f} {max(spread[name]):7.2f}")
    controls = best["control"]
    print(
        f"control: NumPy matmuls on two threads at once vs in a row (one BLAS thread each), per round: "
        f"{', '.join(f'{c:.2f}' for c in controls)} (2.0 on two idle cores)"
    )
    print("throughput ratios (goal >= 1.5) per round: range, median:")
    for name in configs:
        if name.startswith("1 device"):
            continue
        for base in ("1 device, full threads", "1 device, 1 thread"):
            ratios = sorted(b / t for b, t in zip(best[base], best[name]))
            median = statistics.median(ratios)
            print(f"  {name:30s} / {base:24s} {ratios[0]:.2f}-{ratios[-1]:.2f}, {median:.2f}")


if __name__ == "__main__":
    main()
