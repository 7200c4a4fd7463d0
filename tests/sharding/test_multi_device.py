"""Placement, sharded arrays, sharding propagation through jit and eager ops, jit's
in_shardings/out_shardings, reshard and the mesh context, the sharding pictures and
inspect_array_sharding, on 4 CPU devices against JAX 0.10.2's recorded behaviour. The cases live
in sharding_cases.py and run in subprocesses (conftest.py): a process makes its devices once."""

from __future__ import annotations


def test_placement_streams_and_device_errors_on_4_devices(run_cases):
    run_cases(
        "sharding_cases",
        ["case_placement", "case_jit_runs_on_the_committed_device", "case_incompatible_devices"],
    )


def test_sharded_arrays_and_propagation_on_4_devices(run_cases):
    run_cases(
        "sharding_cases",
        [
            "case_sharded_arrays",
            "case_make_array_from",
            "case_explicit_propagation",
            "case_auto_propagation",
        ],
    )


def test_jit_shardings_reshard_pictures_and_inspection_on_4_devices(run_cases):
    run_cases(
        "sharding_cases",
        ["case_jit_in_out_shardings", "case_mesh_context_and_reshard", "case_visualize", "case_inspect"],
    )
