"""`jax.extend.core.jaxpr_as_fun` is curried as in JAX 0.10.2 (issue 33: equinox's
test_nontraceable calls ``jaxpr_as_fun(closed)`` and then the function).

Expected values are what JAX 0.10.2 returns for the same calls.
"""

import functools

import morphax as jax
from morphax.extend.core import jaxpr_as_fun


def test_returns_a_function_of_the_jaxpr_inputs():
    closed = jax.make_jaxpr(lambda x, y: x * 2 + y)(1.0, 1.0)
    f = jaxpr_as_fun(closed)
    # JAX: a functools.partial; f(3.0, 1.0) == [Array(7., weak_type=True)].
    assert isinstance(f, functools.partial)
    (out,) = f(3.0, 1.0)
    assert float(out) == 7.0 and out.weak_type


def test_leading_arguments_are_bound():
    closed = jax.make_jaxpr(lambda x, y: x * 2 + y)(1.0, 1.0)
    # JAX: jaxpr_as_fun(closed, 3.0) is still a function (of y); with every argument, of none.
    assert float(jaxpr_as_fun(closed, 3.0)(1.0)[0]) == 7.0
    assert float(jaxpr_as_fun(closed, 3.0, 1.0)()[0]) == 7.0


def test_differentiable():
    closed = jax.make_jaxpr(lambda x: x * 2)(1.0)
    # JAX: 2.0.
    assert float(jax.grad(lambda x: jaxpr_as_fun(closed)(x)[0])(1.0)) == 2.0
