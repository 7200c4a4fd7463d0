"""How many threads each device's native code may use, when several devices share a machine.

Each CPU device runs its programs on its own stream thread, and the BLAS and OpenMP thread pools
those programs call are sized for the whole machine by default. When the devices of one process
(``jax_num_cpu_devices``), or the processes an MPI launcher started on one machine, run at the
same time, pools of that size compete: OpenBLAS serializes the GEMMs of concurrent callers, and
its spinning workers take the cores from the other devices' threads (the data-parallel MLP step
on two cores: two devices with two BLAS threads each ran 1.4 to 2 times slower than with one;
two MPI processes, 2.7 to 18 times slower). So when the devices are made, each gets an equal share
of the cores (at least one thread): JAX's CPU devices draw on one shared pool instead, and this
is the nearest a pool per device comes to it.

The user's own choice wins: with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MORPHAX_NUM_THREADS set
nothing is changed. OpenMP reads OMP_NUM_THREADS once, when its runtime starts (the first
generated library that uses it), and a jitted call on NumPy inputs may run before the devices
are made: once the runtime has started, each device's stream thread sets its own OpenMP thread
count (`apply_to_this_thread`, before its next job), as the thread that made the devices does.
"""

from __future__ import annotations

import os

# Variables by which a user sizes the pools themselves.
USER_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MORPHAX_NUM_THREADS")

_chosen: dict = {}  # "threads": the share set by share_cores, once it has set one
# Bumped by each share_cores that sets a share: a stream thread that has seen an older value
# applies the share to itself (apply_to_this_thread).
generation = 0
_OPENMP_RUNTIME = "libgomp.so.1"  # GCC's, which the generated code links (-fopenmp)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which launchers and containers may
    narrow), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share(devices_here: int, devices_on_machine: int) -> int:
    """Threads per device for `devices_here` devices in this process and `devices_on_machine` in
    all processes on this machine. A launcher that bound this process to fewer cores than the
    machine has has divided the machine already: the process's cores go to its own devices."""
    cores, machine = usable_cores(), os.cpu_count() or 1
    sharing = devices_here if cores < machine else max(devices_here, devices_on_machine)
    return max(1, cores // max(1, sharing))


def user_chose() -> bool:
    """Whether the user sized the pools (an environment variable this module did not set)."""
    from morphax._src.config import config

    ours = str(_chosen.get("threads"))
    for name in USER_VARIABLES:
        if name in os.environ and not (name == "OMP_NUM_THREADS" and os.environ[name] == ours):
            return True
    return bool(config.morphax_num_threads)


def share_cores(devices_here: int, devices_on_machine: int | None = None) -> int | None:
    """Size the BLAS and OpenMP pools for `devices_here` devices of this process running beside
    `devices_on_machine` in all (default: this process's only). Returns the threads per device,
    or None where nothing changed (one device alone, or the user's own setting)."""
    on_machine = devices_here if devices_on_machine is None else devices_on_machine
    if (max(devices_here, on_machine) <= 1 and "threads" not in _chosen) or user_chose():
        return None
    global generation
    threads = share(devices_here, on_machine)
    _chosen["threads"] = threads
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from morphax._src.compiler.backends.c import blas

    try:
        blas.set_threads(threads)
    except Exception:  # noqa: BLE001 -- no BLAS found (no NumPy OpenBLAS, no SciPy): nothing to size
        pass
    generation += 1
    apply_to_this_thread()
    return threads


def _started_openmp():
    """The OpenMP runtime if this process has loaded it already, else None (never loads it)."""
    import ctypes

    try:
        return ctypes.CDLL(_OPENMP_RUNTIME, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except (OSError, AttributeError):
        return None


def apply_to_this_thread() -> int:
    """Give the calling thread's OpenMP regions the chosen share, where the OpenMP runtime
    started before it was chosen (OpenMP keeps the thread count per thread; a runtime that
    starts later reads OMP_NUM_THREADS). Returns the `generation` applied."""
    seen = generation
    threads = _chosen.get("threads")
    if threads is not None:
        runtime = _started_openmp()
        if runtime is not None:
            runtime.omp_set_num_threads(int(threads))
    return seen


def chosen() -> int | None:
    """The threads per device share_cores set, or None."""
    return _chosen.get("threads")
