"""`morphax.custom_derivatives` and `morphax.stages` as modules: a custom_vjp forward rule with
``symbolic_zeros`` receives CustomVJPPrimal records whose `perturbed` says which inputs carry a
tangent (eagerly, under jit and vmap), the record helpers, and jit's ArgInfo / Wrapped."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import custom_derivatives as cd
from morphax import stages


def _product_with_flags(seen):
    @cd.custom_vjp
    def product(x, y):
        return x * y

    def fwd(x, y):
        seen.append((x.perturbed, y.perturbed))
        x, y = cd.custom_vjp_primal_tree_values((x, y))
        return x * y, (x, y)

    def bwd(res, g):
        x, y = res
        return g * y, g * x

    product.defvjp(fwd, bwd, symbolic_zeros=True)
    return product


def test_forward_rule_sees_which_inputs_are_perturbed():
    seen = []
    product = _product_with_flags(seen)
    assert float(morphax.grad(product)(2.0, 3.0)) == 3.0
    assert float(morphax.jit(morphax.grad(product, argnums=1))(2.0, 3.0)) == 2.0
    g = morphax.vmap(morphax.grad(product))(jnp.ones(3), jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0, 2.0])
    both = morphax.grad(lambda x: product(x, x))(3.0)
    assert float(both) == 6.0
    assert seen == [(True, False), (False, True), (True, False), (True, True)]


def test_record_helpers():
    tree = {"a": cd.CustomVJPPrimal(np.ones(2), True), "b": [cd.CustomVJPPrimal(3.0, False)]}
    values = cd.custom_vjp_primal_tree_values(tree)
    assert values["b"][0] == 3.0 and values["a"].shape == (2,)
    with pytest.raises(TypeError, match="unexpected leaf type"):
        cd.custom_vjp_primal_tree_values({"a": 1.0})
    zeros = cd.zero_from_primal({"w": jnp.ones((2, 3)), "n": jnp.arange(2)})
    assert zeros["w"].shape == (2, 3) and float(jnp.sum(zeros["w"])) == 0.0
    assert zeros["n"].dtype == morphax.dtypes.float0
    symbolic = cd.zero_from_primal(jnp.ones(4), symbolic_zeros=True)
    assert isinstance(symbolic, cd.SymbolicZero) and symbolic.shape == (4,)


def test_stages_arg_info_and_wrapped():
    wrapped = morphax.jit(lambda a, b: a * b)
    assert isinstance(wrapped, stages.Wrapped)
    traced = wrapped.trace(jnp.ones((2, 3)), 2.0)
    (a, b), kwargs = traced.args_info
    assert isinstance(a, stages.ArgInfo) and a.shape == (2, 3) and a.dtype == jnp.float32 and not a.donated
    assert kwargs == {} and b.shape == ()
    lowered = traced.lower()
    assert isinstance(lowered, stages.Lowered) and lowered.args_info == traced.args_info
    compiled = lowered.compile()
    assert isinstance(compiled, stages.Compiled) and compiled.out_info.shape == (2, 3)


def test_custom_jvp_nondiff_arg_may_be_batched_or_traced():
    # JAX 0.10.2 gives these values: the nondiff argument is batched under vmap, traced under jit.
    import functools

    @functools.partial(morphax.custom_jvp, nondiff_argnums=(0,))
    def f(n, x):
        return jnp.floor(n) * jnp.sin(x)

    @f.defjvp
    def f_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return f(n, x), jnp.floor(n) * jnp.cos(x) * t

    n, x = jnp.full(3, 2.5), jnp.ones(3)
    np.testing.assert_allclose(morphax.vmap(f)(n, x), [1.6829419] * 3, rtol=1e-6)
    np.testing.assert_allclose(morphax.vmap(morphax.grad(f, argnums=1))(n, x), [1.0806046] * 3, rtol=1e-6)
    np.testing.assert_allclose(morphax.jit(morphax.vmap(f))(n, x), [1.6829419] * 3, rtol=1e-6)
    np.testing.assert_allclose(morphax.jit(f)(2.5, 1.0), 1.6829419, rtol=1e-6)
