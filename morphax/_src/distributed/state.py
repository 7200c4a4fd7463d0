"""The processes of a multi-process run (``morphax.distributed``): `initialize` joins this process
to the MPI job it was launched in (``mpirun -n N python ...``), registers every process's devices
with the runtime, and keeps the `MPICommunicator` over all processes (`global_communicator`);
`shutdown` and `is_initialized`.

NB: JAX's processes meet at a coordinator service (`coordinator_address`); morphax's meet through
the MPI launcher, which has already started and connected them. The explicit arguments
(`num_processes`, `process_id`) are checked against the MPI job, and `coordinator_address` is kept
for reference only."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from morphax._src.distributed.mpi_communicator import MPICommunicator, mpi, wait_for
from morphax._src.runtime import devices, thread_pools

__all__ = [
    "devices_communicator",
    "global_communicator",
    "initialize",
    "is_initialized",
    "launch_from_environment",
    "shutdown",
]

# The (rank, size) variables MPI launchers set: Open MPI, MPICH/Intel MPI (Hydra's PMI), MVAPICH.
_LAUNCH_VARIABLES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
)
_DETECTION_METHODS = (None, "mpi4py", "deactivate")

# Started beside MPI_Init, which waits (holding the GIL, so no Python thread can time it out) until
# every process of the job has started MPI: past the deadline it explains and stops this process.
_WATCHDOG = """
import os, signal, sys, time
pid, seconds, message = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(seconds)
if os.getppid() == pid:
    sys.stderr.write(message + "\\n")
    sys.stderr.flush()
    os.kill(pid, signal.SIGTERM)
"""


class _State:
    communicator: MPICommunicator | None = None
    # A second communicator over the same processes for the collectives of multi-process pmaps,
    # which device threads make while the main thread may use `communicator` (multihost_utils):
    # separate MPI communicators keep their messages apart.
    devices_communicator: MPICommunicator | None = None
    coordinator_address: str | None = None
    shutdown_timeout: float = 300


_state = _State()


def launch_from_environment() -> tuple[int, int] | None:
    """(rank, size) when this process was started by an MPI launcher, else None."""
    for rank_var, size_var in _LAUNCH_VARIABLES:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and size is not None:
            try:
                return int(rank), int(size)
            except ValueError:
                continue
    return None


def _local_ids(local_device_ids) -> list[int]:
    count = devices.requested_local_count()
    if local_device_ids is None:
        return list(range(count))
    ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
    if not ids or any(not isinstance(i, int) or not 0 <= i < count for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(
            f"distributed.initialize: local_device_ids={local_device_ids!r} must name distinct devices among "
            f"this process's {count} CPU device(s) (0..{count - 1}); set their number with "
            "jax_num_cpu_devices or XLA_FLAGS=--xla_force_host_platform_device_count=N"
        )
    return ids


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: int | Sequence[int] | None = None,
    cluster_detection_method: str | None = None,
    initialization_timeout: int = 300,
    heartbeat_timeout_seconds: int = 100,
    shutdown_timeout_seconds: int = 300,
    coordinator_bind_address: str | None = None,
    slice_index: int | None = None,
    partition_index: int | None = None,
):
    """Join the processes of an MPI job: after it, `process_index()`/`process_count()` are the MPI
    rank and size, `devices()` lists every process's devices and `local_devices()` this one's.
    Under ``mpirun``/``mpiexec`` a bare ``initialize()`` suffices; `num_processes` and
    `process_id`, if given, must match the job. `local_device_ids` keeps only those of this
    process's CPU devices. Processes that do not all arrive within `initialization_timeout`
    seconds make the others raise. Call it before any computation."""
    if _state.communicator is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    if cluster_detection_method not in _DETECTION_METHODS:
        raise ValueError(
            f"distributed.initialize: cluster_detection_method={cluster_detection_method!r} is not supported; "
            "morphax detects MPI launches ('mpi4py', the default) or none ('deactivate')"
        )
    for name, value in (("num_processes", num_processes), ("process_id", process_id)):
        if value is not None and (
            not isinstance(value, int) or value < 0 or (name == "num_processes" and value < 1)
        ):
            raise ValueError(
                f"distributed.initialize: {name}={value!r} must be a non-negative integer (num_processes >= 1)"
            )
    local_ids = _local_ids(local_device_ids)
    launch = None if cluster_detection_method == "deactivate" else launch_from_environment()
    if launch is None and num_processes is None and process_id is None:
        raise ValueError(
            "distributed.initialize: no MPI launch detected (no OMPI_COMM_WORLD_RANK or PMI_RANK in the "
            "environment) and no num_processes/process_id given. Start the processes with "
            "`mpirun -n N python your_script.py`."
        )
    if launch is None and (num_processes or 1) > 1:
        raise ValueError(
            f"distributed.initialize: num_processes={num_processes} but this process was not started by an MPI "
            "launcher; morphax's processes join through MPI: start all of them with "
            f"`mpirun -n {num_processes} python your_script.py`."
        )
    if devices.initialized() and launch is not None and launch[1] > 1:
        raise RuntimeError(
            "distributed.initialize() must be called before any computation is executed (this process's "
            "devices exist already). Call it right after `import morphax`."
        )
    MPI = _start_mpi(launch, initialization_timeout)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if launch is not None and launch[1] != size:
        raise RuntimeError(
            f"distributed.initialize: the launcher started {launch[1]} processes but MPI reports {size}: the "
            "mpirun used belongs to another MPI library than mpi4py's; use the mpirun installed with "
            "mpi4py (`pip install 'morphax[distributed]'` puts MPICH's mpirun beside python)."
        )
    if num_processes is not None and num_processes != size:
        raise ValueError(
            f"distributed.initialize: num_processes={num_processes}, but the MPI job has {size} process(es)"
        )
    if process_id is not None and process_id != rank:
        raise ValueError(
            f"distributed.initialize: process_id={process_id}, but this process is MPI rank {rank}"
        )
    # A non-blocking duplicate, so a process that never calls initialize cannot hang the others.
    comm, request = world.Idup()
    wait_for([request], f"distributed.initialize (process {rank} of {size})", initialization_timeout)
    joining = MPICommunicator(comm, timeout=initialization_timeout)
    import json  # here, as subprocess below: `import morphax` does not load them

    mine = {"ids": local_ids, "host": MPI.Get_processor_name()}
    everyone = [json.loads(b) for b in joining.all_gather_bytes(json.dumps(mine).encode())]
    devices.register_processes(rank, [p["ids"] for p in everyone])
    # The processes of one machine share its cores: size each device's thread pools for all of them.
    beside = sum(len(p["ids"]) for p in everyone if p["host"] == mine["host"])
    thread_pools.share_cores(len(local_ids), beside)
    # NB: heartbeat_timeout_seconds is not a heartbeat here; a missing peer is noticed by the
    # collective that waits for it (morphax_collective_timeout seconds).
    joining.timeout = None
    dup, request = comm.Idup()
    wait_for([request], f"distributed.initialize (process {rank} of {size})", initialization_timeout)
    _state.devices_communicator = MPICommunicator(dup)
    _state.communicator = joining
    _state.coordinator_address = coordinator_address
    _state.shutdown_timeout = shutdown_timeout_seconds


def _start_mpi(launch, timeout):
    """mpi4py.MPI, initialized; under a launcher, stop this process with a message if the other
    processes have not all started MPI within `timeout` seconds."""
    if launch is None or launch[1] == 1 or "mpi4py.MPI" in sys.modules:
        return mpi()
    message = (
        f"morphax.distributed.initialize: process {launch[0]} of {launch[1]} waited {timeout} s "
        "(initialization_timeout) for the other processes of the MPI job to start MPI: one of them "
        "exited or hangs before calling initialize. Stopping this process."
    )
    import subprocess

    args = [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(timeout), message]
    watchdog = subprocess.Popen(args, stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", "")})
    try:
        return mpi()
    finally:
        watchdog.kill()
        watchdog.wait()


def is_initialized() -> bool:
    """Whether `initialize` has run (and `shutdown` has not)."""
    return _state.communicator is not None


def shutdown():
    """Leave the multi-process run: wait for the other processes (a barrier), then release the
    communicator. NB: MPI itself stays initialized (it cannot restart in a process), and the
    device lists and process index stay, as JAX's backends do."""
    communicator = _state.communicator
    if communicator is None:
        return
    _state.communicator = None
    if _state.devices_communicator is not None:
        _state.devices_communicator.free()
        _state.devices_communicator = None
    try:
        if communicator._failed is None:  # after a failed collective the peers are gone already
            communicator.timeout = _state.shutdown_timeout
            communicator.barrier(communicator.rank)
    finally:
        communicator.free()


def global_communicator() -> MPICommunicator:
    """The communicator over all processes (rank = process index), or a clear error before
    `initialize`."""
    if _state.communicator is None:
        raise RuntimeError(
            "morphax.distributed is not initialized: call morphax.distributed.initialize() (under mpirun) first"
        )
    return _state.communicator


def devices_communicator() -> MPICommunicator:
    """The communicator over all processes that multi-process pmaps use (rank = process index),
    or a clear error before `initialize`."""
    if _state.devices_communicator is None:
        raise RuntimeError(
            "morphax.distributed is not initialized: a pmap over the devices of several processes needs "
            "morphax.distributed.initialize() (under mpirun) first"
        )
    return _state.devices_communicator
