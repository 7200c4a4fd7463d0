"""Arrays laid out over several devices of a PJRT plugin and the programs XLA partitions over
them (runtime/xla_partitioned.py), checked on XLA's CPU plugin with 4 devices: what a TPU with
several cores does. The cases (sharded_cases.py) run in an interpreter of their own on the
`xla_cpu` platform, whatever platform this process chose; skipped without the plugin."""

from __future__ import annotations

import pathlib

import pytest

from morphax._src.pjrt.plugin import find_plugin

HERE = pathlib.Path(__file__).resolve().parent

CASES = [
    "device_put_lays_blocks_on_their_devices",
    "jit_runs_one_partitioned_program_and_keeps_results_on_the_devices",
    "a_programs_results_feed_the_next_in_place",
    "eager_operations_and_gradients_on_sharded_arrays",
    "waiting_deleting_and_moving_sharded_arrays",
    "donation_in_shardings_and_callbacks",
    "pmap_results_stay_on_their_devices",
]


def test_sharded_device_arrays(device_case_runner):
    # XLA's CPU plugin itself, not just some PJRT plugin: on a TPU machine libtpu makes the xla
    # backend available, but the cases need the CPU plugin's four devices.
    if find_plugin() is None:
        pytest.skip("no XLA CPU plugin (pip install --no-deps lammps-jax-pjrt-cpu)")
    out = device_case_runner(
        HERE, "sharded_cases", CASES, devices=4, devices_via="config", env={"JAX_PLATFORMS": "xla_cpu"}
    )
    assert out.count("ok ") == len(CASES)
