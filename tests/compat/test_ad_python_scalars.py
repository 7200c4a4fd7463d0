"""Python-scalar arguments of jvp keep their type until a primitive computes on them, as in JAX
0.10.2 (issue 33: equinox's test_filter_custom_jvp_* and test_nondiff_back).

JAX's JVP trace pairs each primal, a Python float included, with its tangent and hands it as it
is to whatever consumes it: a function returning its argument returns the float, a custom_jvp
rule gets the float (and may compute its output in Python), a user primitive's JVP rule gets the
float. Only a primitive's computation turns it into a weakly typed array. Each expected value
below is what JAX 0.10.2 returns for the same program.
"""

import morphax as jax
import morphax.numpy as jnp
from morphax.extend.core import Primitive
from morphax.interpreters import ad


def _types(tree):
    return [type(x).__name__ for x in jax.tree_util.tree_leaves(tree)]


def test_identity_returns_the_python_floats():
    # JAX: (2.0, 3.0), both Python floats.
    out = jax.jvp(lambda x: x, (2.0,), (3.0,))
    assert out == (2.0, 3.0)
    assert _types(out) == ["float", "float"]


def test_an_operation_makes_weak_arrays():
    # JAX: (Array(4., weak_type=True), Array(6., weak_type=True)).
    p, t = jax.jvp(lambda x: x * 2, (2.0,), (3.0,))
    assert _types((p, t)) == ["Array", "Array"]
    assert p.weak_type and t.weak_type
    assert (float(p), float(t)) == (4.0, 6.0)


def test_custom_jvp_rule_sees_the_float():
    seen = []

    @jax.custom_jvp
    def f(x):
        return x * 2

    @f.defjvp
    def f_jvp(p, t):
        seen.append(type(p[0]).__name__)
        return p[0] * 2, t[0] * 2  # Python arithmetic on Python floats

    # JAX: (4.0, 6.0) as Python floats; the rule's primal is a float.
    out = jax.jvp(f, (2.0,), (3.0,))
    assert out == (4.0, 6.0)
    assert _types(out) == ["float", "float"]
    assert seen == ["float"]


def test_user_primitive_rule_sees_the_float():
    p = Primitive("passthrough_for_scalar_test")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    seen = []

    def rule(ps, ts):
        seen.append((type(ps[0]).__name__, type(ts[0]).__name__))
        return ps[0], ts[0]

    ad.primitive_jvps[p] = rule
    # JAX: (2.0, 3.0) as Python floats; the rule's primal and tangent are floats.
    out = jax.jvp(p.bind, (2.0,), (3.0,))
    assert out == (2.0, 3.0)
    assert _types(out) == ["float", "float"]
    assert seen == [("float", "float")]
    # Added to 1 by a built-in primitive: weak float32 arrays (JAX: Array(3.), Array(3.)).
    q, t = jax.jvp(lambda x: p.bind(x) + 1, (2.0,), (3.0,))
    assert _types((q, t)) == ["Array", "Array"] and q.weak_type
    assert (float(q), float(t)) == (3.0, 3.0)


def test_grad_of_python_float_unchanged():
    # JAX: 4.0 (an array) for d/dx x*x at 2.0; the built-in rules still compute on arrays.
    g = jax.grad(lambda x: x * x)(2.0)
    assert float(g) == 4.0 and g.dtype == "float32"


def test_grad_and_vjp_hand_typed_floats_to_custom_rules():
    # JAX 0.10.2: under grad/vjp a Python-float argument is a TypedFloat (a float with a dtype),
    # which a custom_jvp rule receives and may read `.dtype` from; vjp of an identity returns it.
    seen = []

    @jax.custom_jvp
    def f(x):
        return x * 2.0

    @f.defjvp
    def f_jvp(p, t):
        seen.append((type(p[0]).__name__, str(p[0].dtype)))
        return f(p[0]), 2.0 * t[0]

    assert float(jax.grad(f)(1.5)) == 2.0
    assert seen == [("TypedFloat", "float32")]
    out = jax.vjp(lambda x: x, 1.0)[0]
    assert type(out).__name__ == "TypedFloat" and out == 1.0 and out.dtype == jnp.float32
    assert repr(out) == "TypedFloat(1.0, dtype=float32)"
    # jnp.logaddexp's own rule reads the dtype of its primal: JAX's tie-point answer.
    g = jax.grad(jnp.logaddexp, argnums=(0, 1))(1.0, 1.0)
    assert [float(v) for v in g] == [0.5, 0.5]
