"""morphax/examples/data_parallel.py: data-parallel MLP training with pmap, run as its README
says, in subprocesses: one process with one device (the reference), one process with two devices
(``--devices 2``), and ``mpirun -n 2`` (one device per process; skipped without mpi4py and
mpirun). Each run prints its progress and saves its final parameters; the multi-device runs must
reach the one-device parameters. Tolerance: the only difference is the order in which the
devices' gradient means are added (one device sums all 128 rows' losses at once, two devices
average two means of 64), a few float32 ulps per step; after 60 SGD steps the parameters
(entries of size up to ~0.7) measured within 2e-7 of the reference: we allow 1e-5 absolute.
The two-device and two-process runs add in the same order, so they agree exactly."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

STEPS = 60
ARGS = ["-m", "morphax.examples.data_parallel", "--steps", str(STEPS), "--report-every", "30"]


def _mpirun():
    beside = pathlib.Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.exists() else shutil.which("mpirun")


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "PMIX_", "XLA_FLAGS"))}
    # C kernels from the first step in every run: a background build runs the first steps on
    # NumPy (other rounding) for as long as the build takes, which differs between runs.
    env["MORPHAX_COMPILE_IN_BACKGROUND"] = "0"
    return env


def _run(cmd, save):
    out = subprocess.run([*cmd, "--save", str(save)], capture_output=True, text=True, env=_env(), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout, dict(np.load(save))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return _run([sys.executable, *ARGS, "--devices", "1"], tmp_path_factory.mktemp("one") / "params.npz")


@pytest.fixture(scope="module")
def two_devices(tmp_path_factory):
    return _run([sys.executable, *ARGS, "--devices", "2"], tmp_path_factory.mktemp("two") / "params.npz")


def _check(stdout, params, reference, devices, processes):
    lines = [line for line in stdout.splitlines() if line.startswith("step")]
    # Progress is printed (by process 0 only), with the loss falling and the test accuracy high.
    assert [line.split()[1] for line in lines] == ["30", "60"], stdout
    assert f"({devices} devices, {processes} process" in lines[-1], stdout
    assert float(lines[-1].split()[3]) < float(lines[0].split()[3])
    assert float(lines[-1].split()[6]) > 0.9
    ref = reference[1]
    assert sorted(params) == sorted(ref) == ["b0", "b1", "b2", "w0", "w1", "w2"]
    for name in ref:
        np.testing.assert_allclose(params[name], ref[name], rtol=0, atol=1e-5, err_msg=name)


def test_two_devices_in_one_process_reach_the_one_device_parameters(reference, two_devices):
    _check(*two_devices, reference, 2, 1)


@pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or _mpirun() is None,
    reason="needs mpi4py and mpirun: pip install -e '.[distributed]'",
)
def test_two_processes_reach_the_one_device_parameters(reference, two_devices, tmp_path):
    stdout, params = _run([_mpirun(), "-n", "2", sys.executable, *ARGS], tmp_path / "params.npz")
    _check(stdout, params, reference, 2, 2)
    for name in params:  # the same additions in the same order as two devices: bit for bit
        np.testing.assert_array_equal(params[name], two_devices[1][name], err_msg=name)
