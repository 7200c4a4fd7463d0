"""A closed-over scalar jax.Array stays a constvar of the jaxpr, where a scalar made inside the
trace is an inline literal, as in JAX 0.10.2 (core.is_literalable: Python and NumPy scalars and
0-d NumPy arrays are literals, a jax.Array is not). equinox's filter_closure_convert counts on
it: diffrax's runge_kutta step closes over scalars that are concrete eagerly and tracers under
jit, and a checkpointed while loop requires the same consts from both (diffrax test_sil3).
Each expected text is what JAX 0.10.2 prints."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp


def _text(f, *args):
    return str(morphax.make_jaxpr(f)(*args))


def test_closed_over_scalar_array_is_a_constvar():
    c = jnp.asarray(2.0)
    assert _text(lambda x: x + c, 1.0) == "{ lambda a:f32[]; b:f32[]. let c:f32[] = add b a in (c,) }"
    closed = morphax.make_jaxpr(lambda x: x + c)(1.0)
    assert len(closed.consts) == 1 and float(closed.consts[0]) == 2.0


def test_scalar_array_made_inside_the_trace_is_a_literal():
    assert (
        _text(lambda x: x + jnp.asarray(3.0), 1.0)
        == "{ lambda ; a:f32[]. let b:f32[] = add a 3.0:f32[] in (b,) }"
    )
    assert _text(lambda x: x + jnp.asarray(3.0) * 2, 1.0) == (
        "{ lambda ; a:f32[]. let\n    b:f32[] = mul 3.0:f32[] 2.0:f32[]\n    c:f32[] = add a b\n  in (c,) }"
    )


def test_numpy_scalars_stay_literals():
    for k in (np.float32(3.0), np.array(3.0, np.float32)):
        assert _text(lambda x, k=k: x + k, 1.0) == (
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
            "    c:f32[] = add b 3.0:f32[]\n"
            "  in (c,) }"
        )


def test_operations_on_a_closed_over_array_are_staged():
    # JAX stages `c * 2`, `sin(c)` and `v[0]` on a constant when tracing; computing them eagerly
    # would leave a constant (now a constvar) where JAX has an equation.
    c = jnp.asarray(2.0)
    v = jnp.arange(3.0)
    assert _text(lambda x: x + c * 2, 1.0) == (
        "{ lambda a:f32[]; b:f32[]. let\n    c:f32[] = mul a 2.0:f32[]\n    d:f32[] = add b c\n  in (d,) }"
    )
    assert _text(lambda x: x + jnp.sin(c), 1.0) == (
        "{ lambda a:f32[]; b:f32[]. let c:f32[] = sin a; d:f32[] = add b c in (d,) }"
    )
    assert _text(lambda x: x + v[0], 1.0) == (
        "{ lambda a:f32[3]; b:f32[]. let\n"
        "    c:f32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] a\n"
        "    d:f32[] = squeeze[dimensions=(0,)] c\n"
        "    e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n"
        "    f:f32[] = add e d\n"
        "  in (f,) }"
    )


def test_consts_are_the_same_eager_and_under_jit():
    # One const whether the closed-over scalar is concrete or a tracer of an outer jit.
    def n_consts(s):
        return len(morphax.make_jaxpr(lambda x: x * s)(1.0).consts)

    seen = []

    @morphax.jit
    def traced(s):
        seen.append(n_consts(s))
        return s

    traced(jnp.asarray(2.0))
    assert n_consts(jnp.asarray(2.0)) == seen[0] == 1
