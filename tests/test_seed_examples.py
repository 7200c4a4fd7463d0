"""Every snippet of the founding article (SEED_EXAMPLES.md) runs on morphax and gives JAX's
numbers. The references in tests/data/seed_examples_jax.json were recorded by running the same
code (morphax/examples/seed_examples.py) with JAX 0.10.2 on CPU."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from morphax.examples import seed_examples

REFERENCE = json.loads((pathlib.Path(__file__).parent / "data" / "seed_examples_jax.json").read_text())
RESULTS = seed_examples.run("morphax")
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
    # float32 rounding: dot products of 100 terms may differ in the last bits.
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(EXPECTED_SHAPES))
def test_vmap_shapes(name):
    assert np.asarray(RESULTS[name]).shape == EXPECTED_SHAPES[name]


def test_random_inputs_are_bit_identical():
    # The PRNG is bit-compatible, so the sampled parameters agree exactly, not just closely.
    for name in ("W", "b"):
        np.testing.assert_array_equal(np.float32(RESULTS[name]), np.float32(REFERENCE[name]))
