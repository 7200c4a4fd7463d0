"""Global arrays over the devices of several processes (``mpirun -n 2`` on localhost, one and two
devices per process; skipped without mpi4py and mpirun): built from each process's data
(make_array_from_process_local_data, _callback, _single_device_arrays, device_put of a whole
value), computed on under jit (SPMD across the processes: a data-parallel loss and its gradient,
a matmul split on its contracting dimension), eagerly and with shard_map, and read back, against
NumPy on the global values. Host reads of an array split over processes raise, as JAX's do."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
PROGRAM = HERE / "global_array_program.py"


def _load(name):
    """A module of this folder (tests import in importlib mode: the folder is not on sys.path)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


program = _load("global_array_program")
ROWS, COLS, OUT, data = program.ROWS, program.COLS, program.OUT, program.data
launcher = _load("test_mpi")
_mpirun, needs_mpi = launcher._mpirun, launcher.needs_mpi


def _launch(n: int, local_devices: int) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "PMIX_"))}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={local_devices}"
    with tempfile.TemporaryDirectory() as out_dir:
        env["MPI_TEST_OUT"] = out_dir
        out = subprocess.run(
            [_mpirun(), "-n", str(n), sys.executable, str(PROGRAM)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        results = [json.loads(p.read_text()) for p in sorted(pathlib.Path(out_dir).glob("rank*.json"))]
    assert out.returncode == 0 and len(results) == n, out.stdout + out.stderr
    return sorted(results, key=lambda d: d["rank"])


@needs_mpi
@pytest.mark.parametrize("local_devices", [1, 2])
def test_global_arrays_across_two_processes(local_devices):
    n = 2
    x, w, a = data()
    per_device = ROWS // (n * local_devices)
    for r, got in enumerate(_launch(n, local_devices)):
        ids = [r * 2048 + i for i in range(local_devices)]
        ids_rank = [r * local_devices + i for i in range(local_devices)]  # their places in the map
        assert got["shape"] == [ROWS, COLS]
        assert got["fully_addressable"] == [False, False] and got["replicated"] == [False, True]
        starts = [(r * local_devices + i) * per_device for i in range(local_devices)]
        assert got["shards"] == [[d, s, s + per_device] for d, s in zip(ids, starts)]
        for data_, s in zip(got["shard_data"], starts):
            np.testing.assert_array_equal(data_, x[s : s + per_device])
        every = [p * 2048 + i for p in range(n) for i in range(local_devices)]
        assert got["global_shards"] == [[d, d not in ids] for d in every]
        kind, message = got["read"]
        assert (
            kind == "RuntimeError" and "spans non-addressable" in message and "process_allgather" in message
        )
        assert got["repr"] == f"Array(shape=({ROWS}, {COLS}), dtype=float32)"
        np.testing.assert_array_equal(got["gathered"], x)
        np.testing.assert_array_equal(got["whole_read"], w)  # replicated: readable everywhere
        np.testing.assert_allclose(got["loss"], np.mean((x @ w) ** 2), rtol=1e-5)
        np.testing.assert_allclose(got["grad"], 2 / (ROWS * OUT) * x.T @ (x @ w), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got["eager_sum"], 2 * x.astype(np.float64).sum(), rtol=1e-5)
        np.testing.assert_allclose(got["eager_plus"], x + 1, rtol=1e-6)
        np.testing.assert_array_equal(got["eager_max"], x.max(axis=0))
        assert got["element"] == float(x[ROWS - 1, 2])
        np.testing.assert_allclose(got["scaled"], np.tanh(x) * 2, rtol=1e-5, atol=1e-6)
        assert got["scaled_spec"] == "P('batch',)"
        assert got["callback_calls"] == [[s, None] for s in starts]  # this process's pieces only
        np.testing.assert_array_equal(got["from_callback"], x)
        np.testing.assert_array_equal(got["from_pieces"], x)
        np.testing.assert_allclose(got["contracted"], a @ x, rtol=1e-4, atol=1e-5)
        # pmap with axis_index_groups: groups of one process's devices, and groups across processes
        # (their MPI communicators split before the devices start).
        assert got["grouped_within"] == [float(sum(ids_rank))] * local_devices
        assert got["grouped_across"] == [
            float(sum(p * local_devices + i for p in range(n))) for i in range(local_devices)
        ]
        assert got["after_groups"] == [float(sum(range(n * local_devices)))] * local_devices
        # A mesh of two axes (processes x devices): collectives over each axis's groups of devices.
        np.testing.assert_allclose(got["grid"], x.astype(np.float64).sum(), rtol=1e-5)
        np.testing.assert_allclose(got["grid_shard_map"], x.sum(axis=0), rtol=1e-5)
        # shard_map over every process's devices (its results come back whole in every process).
        for key in ("shard_map", "shard_map_jit", "shard_map_whole"):
            np.testing.assert_allclose(got[key], x.sum(axis=0), rtol=1e-5, err_msg=key)
        np.testing.assert_array_equal(got["shard_map_split"], 2 * x)
        np.testing.assert_allclose(
            got["shard_map_grad"], 2 / (ROWS * OUT) * x.T @ (x @ w), rtol=1e-4, atol=1e-6
        )
        np.testing.assert_allclose(got["with_callback"], x.astype(np.float64).sum(), rtol=1e-5)
        np.testing.assert_allclose(got["shard_map_callback"], x.astype(np.float64).sum(), rtol=1e-5)
        # device_put moves it: to the whole layout of the same devices, to one device of this process.
        np.testing.assert_array_equal(got["to_one_device"], x)
        np.testing.assert_array_equal(got["to_whole"], x)
        kind, message = got["to_other_process"]
        assert kind == "NotImplementedError" and "several processes" in message
        assert got["relabel"] is False
        kind, message = got["two_meshes"]  # not read whole (the other processes' pieces are not here)
        assert kind == "NotImplementedError" and "another mesh" in message
