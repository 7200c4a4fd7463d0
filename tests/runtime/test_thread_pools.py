"""Devices that share a machine share its cores (runtime/thread_pools.py): with N CPU devices in a
process, each device's BLAS pool and OpenMP's default get cores / N threads, unless the user sized
the pools; one device keeps all the cores. Each case runs in a fresh interpreter (a process makes
its devices once), its environment free of the variables that size the pools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from morphax._src.runtime import thread_pools

_REPORT = textwrap.dedent(
    """
    import ctypes, ctypes.util, json, os
    import numpy as np
    import morphax
    from morphax._src.compiler.backends.c import blas
    before = blas.thread_count()
    devices = morphax.local_device_count()  # makes the devices (and sizes the pools)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    summed = morphax.pmap(lambda v: morphax.lax.psum(v @ v.T, "i"), "i")(np.stack([x] * devices))
    gomp = ctypes.util.find_library("gomp")  # the OpenMP runtime of the generated code
    print(json.dumps({
        "devices": devices,
        "cores": len(os.sched_getaffinity(0)),
        "blas": [before, blas.thread_count()],
        "omp_env": os.environ.get("OMP_NUM_THREADS"),
        "omp": None if gomp is None else ctypes.CDLL(gomp).omp_get_max_threads(),
        "right": bool(np.allclose(np.asarray(summed[0]), devices * (x @ x.T))),
    }))
    """
)


def _report(devices: int, **env_vars) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MORPHAX_NUM_THREADS", "XLA_FLAGS")
    }
    env.update(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", **env_vars)
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", _REPORT], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_two_devices_share_the_cores_for_blas_and_openmp():
    got = _report(2)
    share = max(1, got["cores"] // 2)
    assert got["right"] and got["devices"] == 2
    assert got["blas"][1] == share and got["omp_env"] == str(share)
    assert got["omp"] in (None, share)


def test_one_device_keeps_every_core_and_the_users_setting_wins():
    alone = _report(1)
    assert alone["right"] and alone["omp_env"] is None
    assert alone["blas"][1] == alone["blas"][0]  # the pool as OpenBLAS sized it
    every = len(os.sched_getaffinity(0))  # OpenBLAS takes at most that many
    chosen = _report(2, OPENBLAS_NUM_THREADS=str(every))
    assert chosen["right"] and chosen["blas"] == [every, every] and chosen["omp_env"] is None
    capped = _report(2, MORPHAX_NUM_THREADS="1")
    assert capped["right"] and capped["omp_env"] == "1"  # the C backend's own cap (OpenMP only)
    assert capped["blas"][1] == capped["blas"][0]


_STARTED_EARLY = textwrap.dedent(
    """
    import ctypes, ctypes.util, json, os
    import morphax
    from morphax._src.runtime import dispatch
    name = ctypes.util.find_library("gomp")
    if name is None:
        print(json.dumps(None))
        raise SystemExit(0)
    gomp = ctypes.CDLL(name)  # OpenMP starts before the devices exist (as after a jitted call)
    before = gomp.omp_get_max_threads()
    devices = morphax.local_device_count()
    seen = []
    for d in range(devices):
        stream = dispatch.stream_for(d)
        stream.submit(lambda: seen.append(gomp.omp_get_max_threads()))
        stream.synchronize()
    print(json.dumps({"cores": len(os.sched_getaffinity(0)), "before": before,
                      "main": gomp.omp_get_max_threads(), "streams": seen}))
    """
)


def test_openmp_started_before_the_devices_still_gets_the_share_in_every_device_thread():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.pop("MORPHAX_NUM_THREADS", None)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", _STARTED_EARLY],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if got is None:
        pytest.skip("no GCC OpenMP runtime (libgomp) on this machine")
    share = max(1, got["cores"] // 2)
    assert got["before"] == got["cores"]  # sized for the whole machine when it started
    assert got["main"] == share and got["streams"] == [share, share]


@pytest.mark.parametrize(
    "cores, machine, here, beside, want",
    [
        (8, 8, 2, 2, 4),  # two devices on an 8-core machine
        (8, 8, 1, 4, 2),  # four one-device processes on one machine
        (8, 8, 2, 6, 1),  # three two-device processes
        (2, 8, 1, 4, 2),  # the launcher bound this process to 2 of the 8 cores: all its own
        (2, 8, 4, 16, 1),
        (2, 2, 3, 3, 1),  # more devices than cores: one thread each, never zero
    ],
)
def test_share_divides_the_usable_cores(monkeypatch, cores, machine, here, beside, want):
    monkeypatch.setattr(thread_pools, "usable_cores", lambda: cores)
    monkeypatch.setattr(os, "cpu_count", lambda: machine)
    assert thread_pools.share(here, beside) == want
