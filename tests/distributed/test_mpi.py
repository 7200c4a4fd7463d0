"""morphax.distributed across processes: `mpirun -n N python mpi_program.py` on localhost (skipped
where mpi4py or mpirun is missing: ``pip install -e ".[distributed]"``), checked against NumPy:
ranks, the global device list, the MPICommunicator's collectives, multihost_utils, the errors for
mismatched shapes and dtypes, a peer that leaves before a collective and one that never joins.
Also the checks that need no MPI: bad arguments and the one-process behaviour."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import ml_dtypes  # noqa: F401 - registers NumPy's 'bfloat16' name (morphax loads it lazily)
import numpy as np
import pytest

import morphax
from morphax.experimental import multihost_utils

PROGRAM = pathlib.Path(__file__).with_name("mpi_program.py")


def _mpirun():
    beside = pathlib.Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.exists() else shutil.which("mpirun")


needs_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or _mpirun() is None,
    reason="needs mpi4py and mpirun: pip install -e '.[distributed]'",
)


def _launch(n: int, scenario: str, local_devices: int = 1):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OMPI_", "PMI_", "PMIX_", "MORPHAX_COLLECTIVE", "MORPHAX_NUM_THREADS"))
        and k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    }
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={local_devices}"
    with tempfile.TemporaryDirectory() as out_dir:
        env["MPI_TEST_OUT"] = out_dir  # one result file per process (stdout lines interleave)
        out = subprocess.run(
            [_mpirun(), "-n", str(n), sys.executable, str(PROGRAM), scenario],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )
        results = [json.loads(p.read_text()) for p in sorted(pathlib.Path(out_dir).glob("rank*.json"))]
    return sorted(results, key=lambda d: d["rank"]), out


@needs_mpi
def test_three_processes_collectives_devices_and_errors():
    n = 3
    results, out = _launch(n, "main", local_devices=2)
    assert out.returncode == 0 and len(results) == n, out.stdout + out.stderr
    xs = [(np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r) * (-1) ** r for r in range(n)]
    devices = [[p * 2048 + i, p, i] for p in range(n) for i in range(2)]
    for r, got in enumerate(results):
        assert (got["process_index"], got["process_count"], got["is_initialized"]) == (r, n, True)
        assert got["devices"] == devices
        assert got["local_devices"] == [r * 2048, r * 2048 + 1]
        assert got["other_local_devices"] == [(r + 1) % n * 2048, (r + 1) % n * 2048 + 1]
        assert got["device_count"] == [2 * n, 2]
        np.testing.assert_array_equal(got["sum"], xs[0] + xs[1] + xs[2])
        np.testing.assert_array_equal(got["max"], np.max(xs, axis=0))
        assert got["min"] == -3
        np.testing.assert_array_equal(got["gather"], np.stack(xs))
        np.testing.assert_array_equal(got["ppermute"], xs[(r - 1) % n])
        assert got["ppermute_partial"] == ([1] if r == n - 1 else [0])
        blocks = [np.arange(2 * n).reshape(n, 2) + 100 * s for s in range(n)]
        np.testing.assert_array_equal(
            got["all_to_all"], np.concatenate([b[r : r + 1] for b in blocks], axis=1)
        )
        group = list(range(r % 2, n, 2))
        assert got["subgroup"] == [len(group), group.index(r), group.index(r), float(sum(group))]
        bf16 = [np.asarray(np.asarray(x[0], "bfloat16"), np.float32) for x in xs]
        np.testing.assert_array_equal(got["bfloat16"], np.stack(bf16))
        np.testing.assert_array_equal(got["allgather"]["a"], np.stack(xs))
        assert got["allgather"]["s"] == [0.0, 1.0, 2.0]
        np.testing.assert_array_equal(got["allgather_tiled"], np.concatenate(xs))
        np.testing.assert_array_equal(got["broadcast"], xs[0])
        np.testing.assert_array_equal(got["broadcast_from_last"], xs[-1])
        assert got["sync"] is None
        assert got["sync_mismatch"][0] == "AssertionError"
        assert f"sync_global_devices name mismatch ('step {r}')" in got["sync_mismatch"][1]
        kind, message, is_value_error = got["shape_mismatch"]
        other = 1 if r == 0 else 0
        assert (kind, is_value_error) == ("CollectiveMismatchError", True)
        assert f"process {r} called all_gather() on float32[{r + 2},3]" in message
        assert f"process {other} called all_gather() on float32[{other + 2},3]" in message
        assert "int32[2]" in got["dtype_mismatch"][1] and "float32[2]" in got["dtype_mismatch"][1]
        assert got["after_mismatch"] == float(n)  # a mismatch leaves the communicator usable
        assert got["jit_after"] == float(2 * xs[r].sum())
        assert got["after_shutdown"] == [False, r]
        # The 3 processes x 2 devices of this machine share its cores (unless the launcher bound
        # each process to its own cores): each device's BLAS and OpenMP pools get their share.
        usable, machine = got["cores"]
        share = max(1, usable // (2 if usable < machine else 2 * n))
        assert got["pools"] == [share, str(share)]
        kind, message, _ = got["after_abort"]
        assert kind == "CollectiveError"
        if r == n - 1:
            assert "unusable after an earlier failure (process 2 aborted (RuntimeError: boom))" in message
        else:
            assert "barrier" in message and "process 2 failed (RuntimeError: boom)" in message


@needs_mpi
def test_reduce_in_order_equals_one_process_folding_in_that_order():
    """The reduce-scatter of MPICommunicator.reduce_in_order (three processes, two contributions
    each, an interleaved order) gives every process bitwise the fold one process computes, for
    sum, max and min over float32, float16, bfloat16, bool, int8, empty and NaN operands."""
    n = 3
    results, out = _launch(n, "reduce_in_order")
    assert out.returncode == 0 and len(results) == n, out.stdout + out.stderr
    for got in results:
        for op in ("sum", "max", "min"):
            assert got[op] == got[op + "_want"] == results[0][op + "_want"], op
        kind, message, is_value_error = got["mismatch"]
        assert (kind, is_value_error) == ("CollectiveMismatchError", True), message
        assert "reduce_in_order(op=sum, operands=float32[2,5,7];float16[2];bfloat16[2,4]" in message
        assert got["after"] == float(sum(range(n)))


@needs_mpi
def test_a_peer_that_leaves_makes_the_others_raise_within_the_timeout():
    results, out = _launch(2, "dead_peer")
    assert len(results) == 1, out.stdout + out.stderr  # process 1 left without printing
    got = results[0]
    kind, message, _ = got["error"]
    assert kind == "CollectiveTimeoutError"
    assert (
        "all_reduce" in message
        and "timed out after 1.5 s" in message
        and "process(es) [1] did not arrive" in message
    )
    assert got["again"][0] == "CollectiveError" and "unusable after an earlier failure" in got["again"][1]
    assert got["waited"] >= 1.5


@needs_mpi
def test_a_peer_that_never_joins_stops_the_others_with_a_message():
    results, out = _launch(2, "never_joins")
    assert results == []  # process 0 never got past initialize
    assert "process 0 of 2 waited 2 s (initialization_timeout)" in out.stderr
    assert out.returncode != 0


def test_initialize_needs_an_mpi_launch_or_arguments(monkeypatch):
    for name in (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMI_SIZE",
        "MV2_COMM_WORLD_RANK",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="no MPI launch detected.*mpirun -n N"):
        morphax.distributed.initialize()
    with pytest.raises(
        ValueError, match="num_processes=2 but this process was not started by an MPI launcher"
    ):
        morphax.distributed.initialize("localhost:1234", num_processes=2, process_id=0)
    with pytest.raises(ValueError, match="cluster_detection_method='slurm' is not supported"):
        morphax.distributed.initialize(cluster_detection_method="slurm")
    with pytest.raises(ValueError, match="local_device_ids=\\[5\\] must name distinct devices"):
        morphax.distributed.initialize(num_processes=1, process_id=0, local_device_ids=[5])
    assert not morphax.distributed.is_initialized()
    morphax.distributed.shutdown()  # nothing to shut down: no error, as JAX


def test_one_process_without_mpi():
    """Before initialize (or in a one-process run) the helpers return the local data."""
    assert (morphax.process_index(), morphax.process_count(), morphax.process_indices()) == (0, 1, [0])
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(multihost_utils.process_allgather(x), x[None])
    np.testing.assert_array_equal(multihost_utils.process_allgather(x, tiled=True), x)
    np.testing.assert_array_equal(multihost_utils.process_allgather(np.float32(3), tiled=True), [3.0])
    out = multihost_utils.broadcast_one_to_all({"a": morphax.numpy.ones(2)})
    assert isinstance(out["a"], np.ndarray) and out["a"].tolist() == [1.0, 1.0]
    multihost_utils.sync_global_devices("one")
    multihost_utils.assert_equal([x, 1])


@needs_mpi
def test_explicit_arguments_one_process():
    """initialize(num_processes=1, process_id=0) without a launcher: MPI starts as a singleton."""
    code = """
import morphax, numpy as np
morphax.distributed.initialize("localhost:1", num_processes=1, process_id=0)
from morphax._src.distributed.state import global_communicator
c = global_communicator()
print(morphax.process_count(), morphax.devices(), c.all_gather(0, np.arange(2)).tolist(), c.ppermute(0, np.ones(1), []).tolist())
try:
    morphax.distributed.initialize()
except RuntimeError as e:
    print(e)
morphax.distributed.shutdown()
print(morphax.distributed.is_initialized())
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "PMIX_", "XLA_FLAGS"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "1 [CpuDevice(id=0)] [[0, 1]] [0.0]",
        "distributed.initialize should only be called once.",
        "False",
    ]


@needs_mpi
def test_wait_for_spins_then_sleeps_and_times_out_naming_the_peer():
    """wait_for tests without sleeping while requests complete (a transfer needs both sides to
    call MPI), sleeps at most a millisecond between tests once it has waited SPIN_SECONDS, and
    still raises at its timeout naming the process it waits for. In a subprocess: MPI starts
    there as a singleton, not in the test process."""
    code = """
import time
import numpy as np
from mpi4py import MPI
from morphax._src.distributed import mpi_communicator as m

sleeps = []
real_sleep = time.sleep
m.time.sleep = lambda s: (sleeps.append(s), real_sleep(s))
comm, got = MPI.COMM_SELF, np.zeros(3)
m.wait_for([comm.Irecv(got, source=0, tag=1), comm.Isend(np.arange(3.0), dest=0, tag=1)], "x", 5)
print(len(sleeps), got.tolist())
pending = comm.Irecv(got, source=0, tag=2)
try:
    m.wait_for([pending], "a receive no one sends", 0.3, [7])
except m.CollectiveTimeoutError as e:
    print("process(es) [7] did not arrive" in str(e), "a receive no one sends timed out after 0.3 s" in str(e))
print(len(sleeps) > 10, max(sleeps) <= 1e-3)
pending.Cancel()
pending.Wait()
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "PMIX_"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["0 [0.0, 1.0, 2.0]", "True True", "True True"]


def test_initialize_without_mpi4py_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # as if the extra were not installed
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setenv("PMI_SIZE", "1")
    with pytest.raises(ImportError, match=r"pip install 'morphax\[distributed\]'"):
        morphax.distributed.initialize()
    assert not morphax.distributed.is_initialized()
