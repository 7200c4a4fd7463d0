"""pmap outputs that every device computes alike (out_axes=None), and the replicated results of
a jit split over a mesh, are computed by one device each: values against vmap and NumPy, and the plan of which device computes what. The cases run
on 4 devices in a subprocess (replicated_output_cases.py)."""

from __future__ import annotations


def test_alike_outputs_are_computed_once_on_4_devices(run_cases):
    run_cases(
        "replicated_output_cases",
        [
            "case_optimizer_step",
            "case_varying_output_comes_from_the_first_device",
            "case_collectives_stay_on_every_device",
            "case_programs_with_effects_are_not_split",
            "case_shard_map_on_a_2x2_mesh",
            "case_sharded_jit_step",
            "case_small_outputs_are_not_split",
        ],
    )
