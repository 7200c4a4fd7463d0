"""Every snippet of the founding article (SEED_EXAMPLES.md) runs on morphax and gives JAX's
numbers. The references in tests/data/seed_examples_jax.json were recorded by running the same
code (morphax/examples/seed_examples.py) with JAX 0.10.2 on CPU; on a TPU, JAX's numbers on the
same chip are the reference (tests/data/chip_reference_tpu_v5e.json)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import morphax
from morphax.examples import seed_examples

DATA = pathlib.Path(__file__).parent / "data"
RESULTS = seed_examples.run("morphax")
ON_TPU = morphax.default_backend() == "tpu"
if ON_TPU:
    # A TPU's float32 products take bfloat16 passes and its transcendental functions round their
    # own way: the reference is JAX's run of the same code on a TPU v5e (tests/tpu/chip_reference.py).
    REFERENCE = json.loads((DATA / "chip_reference_tpu_v5e.json").read_text())["seed_examples"]
    RTOL, ATOL = 1e-3, 1e-5
else:
    REFERENCE = json.loads((DATA / "seed_examples_jax.json").read_text())
    # float32 rounding: dot products of 100 terms may differ in the last bits.
    RTOL, ATOL = 2e-5, 2e-5
EXPECTED_SHAPES = {
    "vmap_none_0": (10, 150),
    "vmap_0": (10, 150),
    "vmap_1_0": (10, 150),
    "vmap_1_1": (150, 10),
    "mm_unusual_layout": (10, 150),
    "mv_none_0": (10, 150),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_matches_jax(name):
    got, want = np.asarray(RESULTS[name]), np.asarray(REFERENCE[name])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", sorted(EXPECTED_SHAPES))
def test_vmap_shapes(name):
    assert np.asarray(RESULTS[name]).shape == EXPECTED_SHAPES[name]


def test_random_inputs_are_bit_identical():
    # The PRNG is bit-compatible, so the sampled parameters agree exactly, not just closely.
    for name in ("W", "b"):
        np.testing.assert_array_equal(np.float32(RESULTS[name]), np.float32(REFERENCE[name]))
