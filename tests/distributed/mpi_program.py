"""The program tests/distributed/test_mpi.py launches with ``mpirun -n N python mpi_program.py
SCENARIO``: each process prints one JSON line of what it saw ("main"), or the error it got when a
peer leaves ("dead_peer") or never starts ("never_joins"). Not a test module itself."""

from __future__ import annotations

import json
import os
import sys
import time

import ml_dtypes  # noqa: F401 - registers NumPy's 'bfloat16' name (morphax loads it lazily)
import numpy as np


def _error(f):
    try:
        f()
    except Exception as e:  # the test checks the type and message
        return [type(e).__name__, str(e), isinstance(e, ValueError)]
    return None


def _emit(result: dict) -> None:
    """One process's result: a file of its own in $MPI_TEST_OUT (the processes' stdout lines
    share one pipe and may interleave), else a line on stdout."""
    out_dir = os.environ.get("MPI_TEST_OUT")
    if out_dir:
        with open(os.path.join(out_dir, f"rank{result['rank']}.json"), "w") as fh:
            json.dump(result, fh)
    else:
        print(json.dumps(result), flush=True)


def _operands(p: int, i: int) -> list:
    """Contribution i of process p to the reduce_in_order scenario: values whose sums round
    differently in different orders, wrapping integers, bfloat16, bool, a scalar, an empty
    array and NaNs (for max and min)."""
    rng = np.random.default_rng(100 * p + i)
    big = (rng.standard_normal((5, 7)) * 10.0 ** rng.integers(-4, 5, (5, 7))).astype(np.float32)
    nan = np.array([1.0, np.nan if (p + i) % 2 else 2.0, -np.inf], np.float64)
    return [
        big,
        np.float16(rng.standard_normal() * 100),
        rng.standard_normal(4).astype("bfloat16"),
        rng.integers(0, 2, 3).astype(bool),
        rng.integers(-128, 128, 5).astype(np.int8),
        np.zeros((0, 2), np.float64),
        nan,
    ]


def _reduce_in_order(comm, r: int, n: int) -> dict:
    """MPICommunicator.reduce_in_order with two contributions per process folded in an
    interleaved order, against one process folding every contribution in that order (as hex
    bytes: bitwise); then a mismatch (orders that differ) and a use after it."""
    order = [(p, i) for i in range(2) for p in range(n)]  # (0,0), (1,0), ..., (0,1), (1,1), ...
    mine = [_operands(r, i) for i in range(2)]
    result = {"rank": r}
    for op, fn in (("sum", np.add), ("max", np.maximum), ("min", np.minimum)):
        got = comm.reduce_in_order(r, mine, order, op)
        want = []
        for j in range(len(mine[0])):
            parts = [_operands(p, i)[j] for p, i in order]
            total = parts[0]
            for v in parts[1:]:
                total = fn(total, v)
            want.append(np.asarray(total, dtype=parts[0].dtype))
        result[op] = [[g.dtype.name, list(g.shape), g.tobytes().hex()] for g in got]
        result[op + "_want"] = [[w.dtype.name, list(w.shape), w.tobytes().hex()] for w in want]
    swapped = order[::-1] if r == 0 else order
    result["mismatch"] = _error(lambda: comm.reduce_in_order(r, mine, swapped, "sum"))
    result["after"] = comm.reduce_in_order(r, [[np.float32(r)]], [(p, 0) for p in range(n)], "sum")[
        0
    ].tolist()
    return result


def main(scenario: str) -> None:
    launch_rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    if scenario == "never_joins" and launch_rank == 1:
        sys.exit(0)  # exits cleanly without ever joining

    import morphax
    from morphax._src.compiler.backends.c import blas
    from morphax._src.distributed.state import global_communicator
    from morphax.experimental import multihost_utils

    if scenario == "never_joins":
        morphax.distributed.initialize(initialization_timeout=2)
        _emit({"rank": launch_rank, "joined": True})
        return

    morphax.distributed.initialize()
    r, n = morphax.process_index(), morphax.process_count()
    comm = global_communicator()
    if scenario == "reduce_in_order":
        _emit(_reduce_in_order(comm, r, n))
        morphax.distributed.shutdown()
        return
    if scenario == "dead_peer":
        morphax.config.update("morphax_collective_timeout", 1.5)
        if r == 1:
            sys.exit(0)  # leaves before the collective the others call
        start = time.monotonic()
        error = _error(lambda: comm.all_reduce(r, np.ones(3, np.float32), "sum"))
        again = _error(lambda: comm.barrier(r))
        waited = time.monotonic() - start
        _emit({"rank": r, "error": error, "again": again, "waited": waited})
        morphax.distributed.shutdown()
        return

    x = (np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r) * (-1) ** r
    ring = [(i, (i + 1) % n) for i in range(n)]
    groups = [list(range(0, n, 2)), list(range(1, n, 2))]
    subs = comm.subgroups(groups)
    mine = next(s for s in subs if s is not None)
    _, rank_in_group = comm.group_of(r, groups)
    result = {
        "rank": r,
        "process_index": r,
        "process_count": n,
        "is_initialized": morphax.distributed.is_initialized(),
        "devices": [[d.id, d.process_index, d.local_hardware_id] for d in morphax.devices()],
        "local_devices": [d.id for d in morphax.local_devices()],
        "other_local_devices": [d.id for d in morphax.local_devices(process_index=(r + 1) % n)],
        "device_count": [morphax.device_count(), morphax.local_device_count()],
        "sum": comm.all_reduce(r, x, "sum").tolist(),
        "max": comm.all_reduce(r, x, "max").tolist(),
        "min": comm.all_reduce(r, np.int32(r * 7 - 3), "min").tolist(),
        "gather": comm.all_gather(r, x).tolist(),
        "ppermute": comm.ppermute(r, x, ring).tolist(),
        "ppermute_partial": comm.ppermute(r, np.array([r + 1], np.int64), [(0, n - 1)]).tolist(),
        "all_to_all": comm.all_to_all(
            r, np.arange(2 * n, dtype=np.int32).reshape(n, 2) + 100 * r, 0, 1
        ).tolist(),
        "subgroup": [
            mine.size,
            mine.rank,
            rank_in_group,
            mine.all_reduce(mine.rank, np.float64(r), "sum").tolist(),
        ],
        "bfloat16": comm.all_gather(r, np.asarray(x[0], dtype="bfloat16")).astype(np.float32).tolist(),
        "allgather": multihost_utils.process_allgather({"a": x, "s": np.float32(r)}),
        "allgather_tiled": multihost_utils.process_allgather(x, tiled=True).tolist(),
        "broadcast": multihost_utils.broadcast_one_to_all(morphax.numpy.asarray(x)).tolist(),
        "broadcast_from_last": multihost_utils.broadcast_one_to_all(x, is_source=r == n - 1).tolist(),
        "sync": _error(lambda: multihost_utils.sync_global_devices("step")),
        "sync_mismatch": _error(lambda: multihost_utils.sync_global_devices(f"step {r}")),
        "shape_mismatch": _error(lambda: comm.all_gather(r, np.zeros((r + 2, 3), np.float32))),
        "dtype_mismatch": _error(
            lambda: comm.all_reduce(r, np.zeros(2, np.float32 if r else np.int32), "sum")
        ),
        "after_mismatch": comm.all_reduce(r, np.float32(1), "sum").tolist(),
        "jit_after": float(morphax.jit(lambda v: (v * 2).sum())(morphax.numpy.asarray(x))),
        "cores": [len(os.sched_getaffinity(0)), os.cpu_count()],
        "pools": [blas.thread_count(), os.environ.get("OMP_NUM_THREADS")],
    }
    result["allgather"] = {k: v.tolist() for k, v in result["allgather"].items()}
    # The last process fails and says so: the others' next collective raises at once.
    if r == n - 1:
        comm.abort(r, RuntimeError("boom"))
    result["after_abort"] = _error(lambda: comm.barrier(r))
    morphax.distributed.shutdown()
    result["after_shutdown"] = [morphax.distributed.is_initialized(), morphax.process_index()]
    _emit(result)


if __name__ == "__main__":
    main(sys.argv[1])
