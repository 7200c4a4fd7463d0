"""`make_jaxpr` of library functions prints as JAX 0.10.2 prints it (issue 34): those JAX
decorates with a plain `jit` (selu and the elu it calls, relu under its custom_jvp, norm,
where's _where) are nested ``jit[name=...]`` equations with JAX's argument order and literals;
softmax, which JAX does not jit, is not. The expected text was recorded with the real JAX by
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

# JAX's random.normal on a raw key wraps it into a typed key (random_wrap) and samples through
# the nested jits _normal, _normal_real and _uniform (the last hoisted as `let _uniform = ...`);
# morphax's samplers still trace to their primitives inline.
NOT_YET = {src for src in CASES if "random.normal" in src}


@pytest.mark.parametrize("src", sorted(CASES))
def test_text_matches_jax(src):
    if src in NOT_YET:
        pytest.xfail("random.normal: typed-key wrapping and nested sampler jits not yet as JAX's")
    env = {"jax": jax, "jnp": jnp, "random": random, "make_jaxpr": make_jaxpr}
    assert str(eval(src, env)) == CASES[src]


def test_recorded_with_jax_0_10_2():
    assert RECORDED["jax_version"] == "0.10.2"
