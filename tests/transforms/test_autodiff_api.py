"""The differentiation API: jvp/vjp/grad/linearize/Jacobians, custom rules, errors, symbolic
zeros, and Python control flow on concrete values. Oracles: closed-form derivatives, NumPy,
and float64 finite differences (check_grads)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.test_util import check_grads
from morphax.tree_util import register_pytree_node_class


def test_grad_of_sin_times_x():
    f = lambda x: jnp.sin(x) * x
    np.testing.assert_allclose(morphax.grad(f)(1.0), np.cos(1.0) + np.sin(1.0), rtol=1e-6)


def test_third_derivative_of_tanh():
    x = 1.0
    t = np.tanh(x)
    # d/dx tanh = 1 - t^2 ; d2 = -2 t (1 - t^2) ; d3 = -2 (1 - t^2)^2 + 4 t^2 (1 - t^2)
    d3 = -2 * (1 - t**2) ** 2 + 4 * t**2 * (1 - t**2)
    got = morphax.grad(morphax.grad(morphax.grad(jnp.tanh)))(x)
    np.testing.assert_allclose(got, d3, rtol=1e-5)


def test_value_and_grad_argnums_and_has_aux():
    def f(x, y, z):
        return jnp.sum(x * y) + z, {"aux": x + 1}

    x, y = jnp.arange(3.0), jnp.ones(3) * 2
    (val, aux), (gx, gy) = morphax.value_and_grad(f, argnums=(0, 1), has_aux=True)(x, y, 1.0)
    assert float(val) == float(np.sum(np.arange(3.0) * 2) + 1)
    np.testing.assert_array_equal(gx, [2, 2, 2])
    np.testing.assert_array_equal(gy, [0, 1, 2])
    np.testing.assert_array_equal(aux["aux"], [1, 2, 3])


def test_python_control_flow_on_concrete_values():
    def f(x):
        if x > 0:
            return x * x
        return -x

    assert float(morphax.grad(f)(3.0)) == 6.0
    assert float(morphax.grad(f)(-3.0)) == -1.0


def test_jacfwd_jacrev_agree_with_finite_differences():
    def f(x):
        return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 2 + jnp.exp(x[1]), x[1] * x[2]])

    x = jnp.array([0.3, -0.7, 1.1])
    jf, jr = morphax.jacfwd(f)(x), morphax.jacrev(f)(x)
    assert jf.shape == jr.shape == (3, 3)
    np.testing.assert_allclose(jf, jr, rtol=1e-6, atol=1e-6)
    xs = np.asarray(x, np.float64)
    fd = np.stack(
        [
            (
                np.array(f(jnp.asarray(xs + 1e-3 * e)), np.float64)
                - np.array(f(jnp.asarray(xs - 1e-3 * e)), np.float64)
            )
            / 2e-3
            for e in np.eye(3)
        ],
        axis=1,
    )
    np.testing.assert_allclose(jf, fd, rtol=2e-2, atol=2e-2)


def test_hessian_of_pytree_input():
    def f(params):
        return jnp.sum(params["w"] ** 3) + params["b"] * jnp.sum(params["w"])

    params = {"w": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)}
    h = morphax.hessian(f)(params)
    np.testing.assert_allclose(h["w"]["w"], np.diag([6.0, 12.0]))
    np.testing.assert_allclose(h["w"]["b"], [1.0, 1.0])
    np.testing.assert_allclose(h["b"]["w"], [1.0, 1.0])
    np.testing.assert_allclose(h["b"]["b"], 0.0)


def test_grad_through_user_pytree_class():
    @register_pytree_node_class
    class Point:
        def __init__(self, x, y, z):
            self.x, self.y, self.z = x, y, z

        def tree_flatten(self):
            return ((self.x, self.y, self.z), None)

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    g = morphax.grad(lambda p: jnp.sqrt(p.x**2 + p.y**2 + p.z**2))(Point(1.0, 2.0, 3.0))
    n = np.sqrt(14.0)
    np.testing.assert_allclose([g.x, g.y, g.z], [1 / n, 2 / n, 3 / n], rtol=1e-6)


def test_linearize_evaluates_without_retracing():
    calls = []

    def f(x):
        calls.append(1)
        return jnp.sin(x) * x

    y, f_jvp = morphax.linearize(f, 2.0)
    assert len(calls) == 1
    for t in (1.0, 2.0, -0.5):
        np.testing.assert_allclose(f_jvp(t), (np.cos(2.0) * 2 + np.sin(2.0)) * t, rtol=1e-5)
    assert len(calls) == 1


def test_symbolic_zeros_build_no_dense_zeros():
    def f(x, unused):
        return jnp.sin(x)

    _, f_jvp = morphax.linearize(f, 1.0, jnp.ones((1000,)))
    # Only sin's tangent work is staged; nothing for the unused argument.
    assert [e.primitive.name for e in f_jvp.jaxpr.jaxpr.eqns] == ["mul"]
    g = morphax.grad(f, argnums=1)(1.0, jnp.ones(4))
    np.testing.assert_array_equal(g, np.zeros(4))


def test_stop_gradient():
    f = lambda x: x * lax.stop_gradient(x)
    assert float(morphax.grad(f)(3.0)) == 3.0


def test_custom_jvp_gives_the_stable_gradient():
    @morphax.custom_jvp
    def log1pexp(x):
        return jnp.log1p(jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1 - 1 / (1 + jnp.exp(x)))

    naive = morphax.grad(lambda x: jnp.log1p(jnp.exp(x)))(100.0)
    assert np.isnan(float(naive))
    assert float(morphax.grad(log1pexp)(100.0)) == 1.0
    np.testing.assert_allclose(morphax.grad(log1pexp)(0.5), 1 / (1 + np.exp(-0.5)), rtol=1e-6)


def test_custom_jvp_defjvps_and_nondiff_argnums():
    from functools import partial

    @partial(morphax.custom_jvp, nondiff_argnums=(0,))
    def scaled(k, x):
        return k * jnp.sin(x)

    @scaled.defjvp
    def scaled_jvp(k, primals, tangents):
        (x,), (t,) = primals, tangents
        return scaled(k, x), k * jnp.cos(x) * t * 10  # deliberately not the true derivative

    assert float(morphax.grad(lambda x: scaled(2.0, x))(0.0)) == 20.0

    @morphax.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x * 0)
    assert float(morphax.grad(f, argnums=1)(2.0, 3.0)) == 0.0
    assert float(morphax.grad(f, argnums=0)(2.0, 3.0)) == 3.0


def test_custom_vjp_uses_bwd():
    @morphax.custom_vjp
    def clip_gradient(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        return (jnp.clip(g, -1.0, 1.0),)

    clip_gradient.defvjp(fwd, bwd)
    assert float(morphax.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == 1.0
    with pytest.raises(TypeError, match="forward-mode"):
        morphax.jvp(clip_gradient, (1.0,), (1.0,))


def test_custom_gradient():
    @morphax.custom_gradient
    def f(x):
        return x**2, lambda g: (g * 100.0,)

    assert float(morphax.grad(f)(3.0)) == 100.0


def test_closure_convert_hoists_constants():
    c = jnp.array([1.0, 2.0])

    def f(x):
        return jnp.sum(x * c)

    converted, consts = morphax.closure_convert(f, jnp.ones(2))
    assert len(consts) == 1
    np.testing.assert_allclose(converted(jnp.ones(2), *consts), 3.0)


def test_linear_transpose():
    f = lambda x: jnp.sum(x * 3.0)
    t = morphax.linear_transpose(f, jnp.ones(3))
    (ct,) = t(jnp.array(2.0))
    np.testing.assert_array_equal(ct, [6.0, 6.0, 6.0])


def test_allow_int_gives_float0():
    g = morphax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert float(g[0]) == 3.0
    assert g[1].dtype == morphax.dtypes.float0


def test_holomorphic_grad():
    g = morphax.grad(lambda z: z**2, holomorphic=True)(jnp.complex64(1 + 2j))
    np.testing.assert_allclose(complex(g), 2 * (1 + 2j), rtol=1e-6)


def test_complex_input_real_output_uses_conjugate_convention():
    # JAX: grad(|z|^2)(z) == 2 * conj(z)
    g = morphax.grad(lambda z: jnp.real(z * jnp.conj(z)))(jnp.complex64(1 + 1j))
    np.testing.assert_allclose(complex(g), 2 - 2j, rtol=1e-6)


def test_check_grads_second_order():
    check_grads(
        lambda x, y: jnp.sin(x) * jnp.exp(y) + x * y, (jnp.array([0.3, 0.5]), jnp.array([0.1, -0.2])), order=2
    )


# --------------------------------------------------------------------------------- bad input


def test_grad_of_non_scalar_output_names_shape_and_alternatives():
    with pytest.raises(TypeError, match=r"shape: \(3,\).*vjp.*jacrev"):
        morphax.grad(lambda x: x * 2)(jnp.ones(3))


def test_grad_wrt_integer_names_argument():
    with pytest.raises(TypeError, match="argument 0.*int32.*allow_int"):
        morphax.grad(lambda x: x * 2.0)(jnp.int32(3))


def test_jvp_mismatches_name_what_differs():
    with pytest.raises(TypeError, match="tree structure"):
        morphax.jvp(jnp.sin, (1.0, 2.0), (1.0,))
    with pytest.raises(ValueError, match="shape"):
        morphax.jvp(jnp.sin, (jnp.ones(3),), (jnp.ones(2),))
    with pytest.raises(TypeError, match="float32.*float0|dtype"):
        morphax.jvp(lambda n: n * 2, (jnp.int32(1),), (jnp.float32(1.0),))
    with pytest.raises(TypeError, match="tuples or lists"):
        morphax.jvp(jnp.sin, 1.0, 1.0)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match="has_aux"):
        morphax.grad(lambda x: x * 2, has_aux=True)(1.0)


def test_missing_rules_name_the_primitive():
    from morphax._src.core.primitive import Primitive

    p = Primitive("test_no_rules")
    p.impl = lambda x: x
    p.abstract_eval = lambda a: a
    with pytest.raises(NotImplementedError, match="test_no_rules"):
        morphax.grad(lambda x: p.bind(x))(1.0)
    from morphax._src.core import primitive as prim_mod

    del prim_mod.registry["test_no_rules"]


@pytest.mark.parametrize("jac", [morphax.jacfwd, morphax.jacrev, morphax.hessian], ids=lambda j: j.__name__)
def test_jacobians_are_vectorized_not_looped(jac):
    # With vmap the traced program has the same number of equations whatever the output size.
    def f(x):
        return jnp.sin(x) * jnp.sum(x**2)

    small = morphax.make_jaxpr(jac(f))(jnp.ones(3))
    large = morphax.make_jaxpr(jac(f))(jnp.ones(30))
    assert len(small.jaxpr.eqns) == len(large.jaxpr.eqns)
    x = jnp.linspace(0.1, 1.0, 5)
    if jac is not morphax.hessian:
        np.testing.assert_allclose(morphax.jacfwd(f)(x), morphax.jacrev(f)(x), rtol=1e-5, atol=1e-6)
