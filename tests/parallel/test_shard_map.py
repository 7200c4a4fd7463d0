"""shard_map on a 2x2 (and a 1-D) mesh of 4 CPU devices against the same per-block program under
nested vmaps with the mesh's axis names and against NumPy: collectives over each axis and both,
specs, jit, grad (and inside), vmap, the trace cache and the errors. The cases live in
shard_map_cases.py and run in one subprocess (conftest.py)."""

from __future__ import annotations


def test_shard_map_on_4_devices(run_cases):
    run_cases(
        "shard_map_cases",
        [
            "case_collectives_on_a_2x2_mesh",
            "case_specs_and_meshes",
            "case_jit_grad_vmap_and_cache",
            "case_errors",
            "case_smap_over_one_axis",
            "case_result_shardings",
        ],
    )
