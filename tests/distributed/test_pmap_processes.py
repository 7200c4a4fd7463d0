"""pmap across processes: ``mpirun -n 2`` with 2 CPU devices per process runs
tests/distributed/pmap_program.py (each process feeding its local devices' slices, collectives
spanning both processes), and its results, put together in process order, must equal bit for bit
the same program in one process on 4 devices (psum/pmean/pmax/pmin, a psum of several operands in one exchange, all_gather, ppermute full
and partial, all_to_all, axis_index, jit of pmap, pmean of gradients). Processes that disagree on
a collective's shapes both raise, naming them; a device failing in one process makes the other
raise at once with its error. Skipped where mpi4py or mpirun is missing; the
one-process planning checks run everywhere."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

PROGRAM = pathlib.Path(__file__).with_name("pmap_program.py")


def _mpirun():
    beside = pathlib.Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.exists() else shutil.which("mpirun")


needs_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or _mpirun() is None,
    reason="needs mpi4py and mpirun: pip install -e '.[distributed]'",
)


def _env(local_devices):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OMPI_", "PMI_", "PMIX_", "MORPHAX_COLLECTIVE"))
    }
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={local_devices}"
    env["MORPHAX_COLLECTIVE_TIMEOUT"] = "60"
    # C kernels from the first call in every run (a background build would run the first calls
    # on NumPy, whose rounding differs, for as long as the build takes).
    env["MORPHAX_COMPILE_IN_BACKGROUND"] = "0"
    return env


def _results(folder):
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


@needs_mpi
def test_two_processes_of_two_devices_equal_one_process_of_four(tmp_path):
    (tmp_path / "mpi").mkdir()
    (tmp_path / "one").mkdir()
    mpi = subprocess.run(
        [_mpirun(), "-n", "2", sys.executable, str(PROGRAM), str(tmp_path / "mpi")],
        capture_output=True,
        text=True,
        env=_env(2),
        timeout=300,
    )
    ref = subprocess.run(
        [sys.executable, str(PROGRAM), "--reference", str(tmp_path / "one")],
        capture_output=True,
        text=True,
        env=_env(4),
        timeout=300,
    )
    procs, (single,) = _results(tmp_path / "mpi"), _results(tmp_path / "one")
    assert mpi.returncode == 0 and len(procs) == 2, mpi.stdout + mpi.stderr
    assert ref.returncode == 0, ref.stdout + ref.stderr
    for r, got in enumerate(procs):
        assert (got["rank"], got["process_count"], got["local"], got["device_count"]) == (r, 2, 2, 4)
    assert (single["process_count"], single["local"]) == (1, 4)
    names = [k for k in single if k not in ("rank", "process_count", "local", "device_count")]
    assert len(names) == 13
    for name in names:
        for got in procs:
            assert not isinstance(got[name], str), f"{name}: {got[name]}"
        assert not isinstance(single[name], str), f"{name}: {single[name]}"
        if name == "grad_through_pmap":
            # Each process differentiates the sum of its own outputs: the processes' gradients
            # add up to the one-process gradient (summed in another order: a tolerance).
            total = sum(np.asarray(got[name][0]) for got in procs)
            np.testing.assert_allclose(total, np.asarray(single[name][0]), rtol=1e-5, atol=1e-6)
            continue
        for j, want in enumerate(single[name]):
            got = np.concatenate([np.asarray(p[name][j]) for p in procs], axis=0)
            np.testing.assert_array_equal(got, np.asarray(want), err_msg=name)
    for got in procs:
        kind, message = got["mismatch"]
        assert kind == "CollectiveMismatchError", message
        assert message.startswith("all_reduce(sum) across processes"), message
        assert "float32[2,3]" in message and "float32[2,4]" in message, message


@needs_mpi
def test_a_failing_device_stops_every_process_at_once(tmp_path):
    env = _env(2)
    env["MORPHAX_COLLECTIVE_TIMEOUT"] = "30"
    run = subprocess.run(
        [_mpirun(), "-n", "2", sys.executable, str(PROGRAM), "--failure", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    procs = _results(tmp_path)
    assert run.returncode == 0 and len(procs) == 2, run.stdout + run.stderr
    # The callback's exception reaches the caller as JAX reports it: a JaxRuntimeError whose
    # text is the callback's traceback, ending with the exception's line.
    kind, message = procs[1]["error"]
    assert kind == "JaxRuntimeError" and "CpuCallback error calling callback" in message, procs[1]
    assert message.rstrip().endswith("RuntimeError: a device of process 1 failed"), message
    kind, message = procs[0]["error"]
    assert kind == "CollectiveError" and "process 1 failed (JaxRuntimeError:" in message, message
    assert "RuntimeError: a device of process 1 failed" in message, message
    assert procs[0]["seconds"] < 20  # told by process 1's abort, not by the 30 s timeout


def test_one_process_plans_its_own_devices():
    from morphax._src.runtime import pmap_runner

    assert pmap_runner.global_axis_size("f", 1) == 1
    assert pmap_runner.participants(1, 1, None) == ((0,), (0,), None)
    with pytest.raises(ValueError, match="requires 2 logical devices"):
        pmap_runner.global_axis_size("f", 2)
