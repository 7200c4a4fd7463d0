"""`custom_jvp_call`'s `get_bind_params` in JAX 0.10.2's form (issue 33: equinox's
test_finalise_jaxpr::test_custom_jvp re-evaluates a jaxpr and calls ``subfuns[0].call_wrapped``).

JAX gives interpreters that re-evaluate an equation the primal function and the rule as
``subfuns`` (functions with ``call_wrapped``) in place of ``call_jaxpr``, ``jvp_jaxpr_fun`` and
``num_consts``, and its `bind` takes them back. Expected values are JAX 0.10.2's.
"""

import numpy as np

import morphax as jax
import morphax.numpy as jnp
from morphax.extend import linear_util as lu


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


f.defjvp(lambda p, t: (f(p[0]), t[0] * 10.0))

PRINTED = """\
{ lambda ; a:f32[]. let
    b:f32[] = custom_jvp_call[
      name=f
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }
      jvp=<lambda>
      symbolic_zeros=False
    ] a
  in (b,) }"""


def _eqn():
    (eqn,) = jax.make_jaxpr(f)(1.0).eqns
    return eqn


def test_subfuns_in_place_of_the_jaxpr_and_rule():
    eqn = _eqn()
    params = eqn.primitive.get_bind_params(eqn.params)
    # JAX: ['subfuns', 'symbolic_zeros'].
    assert sorted(params) == ["subfuns", "symbolic_zeros"]
    fun, jvp = params["subfuns"]
    # JAX: [sin(1.)]; the rule in JAX's convention (primals, then tangents): [sin(1.), 20.].
    np.testing.assert_allclose(np.asarray(fun.call_wrapped(1.0)[0]), np.sin(np.float32(1.0)), rtol=1e-6)
    out = jvp.call_wrapped(1.0, 2.0)
    assert len(out) == 2 and float(out[1]) == 20.0


def test_rebinding_records_the_same_equation_and_keeps_the_rule():
    eqn = _eqn()
    params = eqn.primitive.get_bind_params(eqn.params)

    def g(x):
        return eqn.primitive.bind(x, **params)[0]

    # JAX: the same custom_jvp_call equation; jvp uses the rule (tangent 10.0).
    assert str(jax.make_jaxpr(g)(1.0)) == PRINTED
    assert float(jax.jvp(g, (1.0,), (1.0,))[1]) == 10.0


def test_binding_functions_from_elsewhere():
    # Wrapped functions a library made itself: JAX 0.10.2 gives cos(1.) and the rule's 7.0, and
    # prints custom_jvp_call[name=<lambda> ... jvp=<lambda>].
    eqn = _eqn()
    fun = lu.wrap_init(lambda x: [jnp.cos(x)])
    jvp = lu.wrap_init(lambda x, t: [jnp.cos(x), t * 7.0])

    def g(x):
        return eqn.primitive.bind(x, subfuns=(fun, jvp), symbolic_zeros=False)[0]

    np.testing.assert_allclose(np.asarray(g(1.0)), np.cos(np.float32(1.0)), rtol=1e-6)
    assert float(jax.jvp(g, (1.0,), (1.0,))[1]) == 7.0
    assert float(jax.grad(g)(1.0)) == 7.0
    text = str(jax.make_jaxpr(g)(1.0))
    assert "custom_jvp_call[\n      name=<lambda>" in text and "jvp=<lambda>" in text
