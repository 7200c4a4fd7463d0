"""Eager calls of the samplers run one compiled program per signature, as JAX's jit-decorated
samplers do (issue 34 #1): traces are counted (never timed), and the values are the same bits as
the same sampler traced inside a user's jit and as the sampler's body run primitive by primitive
(morphax.disable_jit)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import random
from morphax._src.api.jit import trace_counters

SAMPLERS = [
    ("uniform", lambda k, n: random.uniform(k, (n,), minval=-2.0, maxval=3.0)),
    ("normal", lambda k, n: random.normal(k, (3, n))),
    ("normal complex", lambda k, n: random.normal(k, (n,), dtype=jnp.complex64)),
    ("truncated_normal", lambda k, n: random.truncated_normal(k, -1.5, 2.0, (n,))),
    ("glorot_normal", lambda k, n: morphax.nn.initializers.glorot_normal()(k, (n, 17))),
    ("split", lambda k, n: random.split(k, n)),
]
_sizes = iter(range(300, 400))  # a shape no other test used: a new signature


@pytest.mark.parametrize("name,sample", SAMPLERS, ids=[s[0] for s in SAMPLERS])
@pytest.mark.parametrize("typed", [False, True])
def test_eager_samplers_trace_once_and_give_the_traced_bits(name, sample, typed):
    key = random.key(7) if typed else random.PRNGKey(7)
    n = next(_sizes)
    before = trace_counters.traces
    first = sample(key, n)
    # One program for the new signature: its trace, and those of the nested jits JAX has there
    # (normal's _normal, _normal_real and _uniform).
    traced = trace_counters.traces - before
    assert 1 <= traced <= (3 if name.startswith("normal") else 1)
    again = sample(key, n)
    other = sample(random.fold_in(key, 1), n)
    assert trace_counters.traces == before + traced  # the same signature: no new trace
    bits = random.key_data if typed and name == "split" else np.asarray
    first, again, other = (np.asarray(bits(v)) for v in (first, again, other))
    assert first.tobytes() == again.tobytes()
    assert first.tobytes() != other.tobytes()
    inside = morphax.jit(sample, static_argnums=1)(key, n)
    with morphax.disable_jit():
        stepwise = sample(key, n)
    assert first.tobytes() == np.asarray(bits(inside)).tobytes()
    assert first.tobytes() == np.asarray(bits(stepwise)).tobytes()


def test_traced_samplers_are_jaxs_nested_jits():
    # Under a user's trace: normal's nested jits as JAX's (tests/compat/test_library_jit_text.py
    # has the whole text); the compiler inlines them.
    text = str(morphax.make_jaxpr(lambda k: random.normal(k, (4,)))(random.PRNGKey(0)))
    assert "name=_normal_real" in text and "erf_inv" in text
    text = str(morphax.make_jaxpr(lambda k: random.uniform(k, (4,)))(random.PRNGKey(0)))
    assert "jit[" not in text and "random_bits" not in text  # uniform: still inline on raw keys
