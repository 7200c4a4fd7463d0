"""jit on sharded inputs runs SPMD: the program is partitioned into a per-device program that every
device of the mesh runs on its blocks, with collectives where blocks meet, and operations the
partitioner does not handle run replicated (counted). The cases live in spmd_cases.py and run on 4
CPU devices in subprocesses (conftest.py)."""

from __future__ import annotations


def test_data_parallel_training_step_runs_on_every_device(run_cases):
    run_cases("spmd_cases", ["case_data_parallel_mlp"])


def test_matmuls_meshes_reductions_layout_ops_and_constraints(run_cases):
    run_cases(
        "spmd_cases",
        [
            "case_matmul_contracting_and_output_dims",
            "case_operation_out_sharding",
            "case_two_dimensional_mesh",
            "case_reductions_layout_ops_and_constraints",
        ],
    )


def test_other_operations_partitioned_or_fall_back_correctly(run_cases):
    run_cases(
        "spmd_cases",
        [
            "case_along_axis_ops",
            "case_cross_entropy_stays_split",
            "case_batched_linear_algebra_and_ffts",
            "case_slices_pads_concatenations_gathers",
            "case_control_flow",
            "case_fallback_is_still_correct",
        ],
    )
