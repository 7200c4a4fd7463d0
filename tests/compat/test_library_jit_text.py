"""`make_jaxpr` of library functions prints as JAX 0.10.2 prints it (issue 34): those JAX
decorates with a plain `jit` (selu and the elu it calls, relu under its custom_jvp, norm,
where's _where, and random.normal's _normal, _normal_real and _uniform after wrapping a raw
key into a typed one) are nested ``jit[name=...]`` equations with JAX's argument order and
literals; softmax, which JAX does not jit, is not. The expected text was recorded with the real JAX by
tests/data/record_library_jit_text.py."""

from __future__ import annotations

import json
import pathlib

import pytest

import morphax as jax
import morphax.numpy as jnp
from morphax import make_jaxpr, random

RECORDED = json.loads((pathlib.Path(__file__).parents[1] / "data" / "library_jit_text.json").read_text())
CASES = RECORDED["cases"]


@pytest.mark.parametrize("src", sorted(CASES))
def test_text_matches_jax(src):
    env = {"jax": jax, "jnp": jnp, "random": random, "make_jaxpr": make_jaxpr}
    assert str(eval(src, env)) == CASES[src]


def test_recorded_with_jax_0_10_2():
    assert RECORDED["jax_version"] == "0.10.2"
