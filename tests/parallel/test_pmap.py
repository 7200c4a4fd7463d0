"""pmap on 4 CPU devices, against the same programs under vmap with the same axis name (values,
gradients, every collective), its cache, its errors, and the devices running concurrently.
The cases live in pmap_cases.py and run in subprocesses (conftest.py) (a process makes its devices once);
one-device behaviour runs here."""

from __future__ import annotations

import numpy as np

import morphax
from morphax import lax


def test_collectives_and_arguments_on_4_devices(run_cases):
    run_cases(
        "pmap_cases",
        [
            "case_collectives",
            "case_axis_index_groups",
            "case_axes_and_arguments",
            "case_errors",
            "case_output_sharding",
        ],
    )


def test_grads_nesting_jit_cache_and_concurrency_on_4_devices(run_cases):
    run_cases(
        "pmap_cases",
        [
            "case_grads",
            "case_nesting_and_jit",
            "case_trace_and_compile_cache",
            "case_devices_run_concurrently",
            "case_pmaps_from_several_threads",
            "case_jit_of_pmap_between_eager_pmaps",
            "case_loops_with_collectives_in_their_tests",
        ],
    )


def test_one_device():
    x = np.arange(3.0, dtype=np.float32)[None]
    out = morphax.pmap(lambda v: lax.psum(v, "i") + lax.axis_index("i"), "i")(x)
    np.testing.assert_allclose(out, x)
    g = morphax.grad(lambda v: morphax.pmap(lambda a: (a**2).sum(), "i")(v).sum())(x)
    np.testing.assert_allclose(g, 2 * x)
