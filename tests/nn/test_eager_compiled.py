"""Library functions JAX decorates with `jit` run compiled when called eagerly in morphax too
(api/eager_compiled.py): one trace per signature (counted, never timed), the values of the same
function run primitive by primitive (morphax.disable_jit) to an ulp, plain calls where a static
argument cannot be hashed, and under a user's trace no nested call."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import nn
from morphax._src.api.jit import trace_counters

X = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)

CALLS = [
    ("relu", lambda x: nn.relu(x)),
    ("gelu", lambda x: nn.gelu(x)),
    ("gelu exact", lambda x: nn.gelu(x, approximate=False)),
    ("silu", lambda x: nn.silu(x)),
    ("softmax", lambda x: nn.softmax(x, axis=0)),
    ("log_softmax", lambda x: nn.log_softmax(x)),
    ("logsumexp", lambda x: nn.logsumexp(x, axis=1, keepdims=True)),
    ("elu", lambda x: nn.elu(x, alpha=0.5)),
    ("var", lambda x: jnp.var(x, axis=0, ddof=1)),
    ("var method", lambda x: x.var()),
    ("norm", lambda x: jnp.linalg.norm(x, ord=1, axis=1)),
    ("norm fro", lambda x: jnp.linalg.norm(x)),
]


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_eager_calls_compile_once_per_signature(name, call):
    x = jnp.asarray(X[: 3 + len(name) % 3])  # a shape of its own: a new signature
    before = trace_counters.traces
    first = call(x)
    traced = trace_counters.traces - before
    # The function's own trace, plus one for each nested jit it calls (as JAX's: elu's where is
    # its jit-decorated _where, relu is a custom_jvp of a jit), each once per signature.
    assert 1 <= traced <= 3, traced
    again = call(x)
    assert trace_counters.traces - before == traced
    np.testing.assert_array_equal(np.asarray(first), np.asarray(again))
    with morphax.disable_jit():
        stepwise = call(x)
    np.testing.assert_allclose(np.asarray(first), np.asarray(stepwise), rtol=2e-6, atol=1e-7)


def test_unhashable_static_arguments_make_plain_calls():
    x = jnp.asarray(X)
    before = trace_counters.traces
    got = jnp.var(x, axis=[0, 1])  # a list: not hashable, as JAX's jit would refuse it
    assert trace_counters.traces == before
    np.testing.assert_allclose(np.asarray(got), X.var(), rtol=1e-5)


def test_under_a_trace_no_nested_call():
    # JAX does not jit gelu, and its var is not yet a nested call in morphax.
    text = str(morphax.make_jaxpr(lambda x: nn.gelu(jnp.var(x, axis=0)))(X))
    assert "jit[" not in text and "tanh" in text


def test_under_a_trace_a_nested_call_where_jax_has_one():
    # JAX's plain @jit functions are nested jit equations under a trace (the compiler inlines
    # them); its jit(inline=True) sigmoid and unjitted softmax are not.
    for fn, name in [(nn.selu, "selu"), (nn.silu, "silu"), (jnp.linalg.norm, "norm")]:
        text = str(morphax.make_jaxpr(fn)(X))
        assert f"jit[\n      name={name}\n" in text, text
    for fn in (nn.sigmoid, nn.softmax):
        assert "jit[" not in str(morphax.make_jaxpr(fn)(X))
