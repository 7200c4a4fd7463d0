"""The named-axis collectives lowered to StableHLO: pmap on the xla backend runs its per-device
program as one module of 4 replicas (cases in xla_collective_cases.py, in a subprocess with 4
devices). Skipped without a PJRT plugin."""

from __future__ import annotations

import pytest

from morphax._src.compiler.backends import get_backend

pytestmark = pytest.mark.skipif(not get_backend("xla").available(), reason="no PJRT plugin")


def test_collectives_lowered_on_4_devices(run_cases):
    run_cases(
        "xla_collective_cases",
        [
            "case_every_collective",
            "case_integer_and_bool_operands",
            "case_axis_index_groups",
            "case_a_2d_mesh_numbers_replicas_row_major",
            "case_gradients_and_a_training_step",
            "case_control_flow_with_collectives",
            "case_a_callback_falls_back_to_the_host_collectives",
        ],
    )
