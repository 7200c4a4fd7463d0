"""Custom rules survive staging: a custom_jvp / custom_vjp function traced into a jaxpr (jit,
control-flow bodies) is one `custom_jvp_call` / `custom_vjp_call` equation, and transformations
applied afterwards (grad of jit, vmap of grad of jit, grad of scan) use the user's rule, not the
derivative of the primal code. Rules here deliberately disagree with the true derivative so
that using the wrong one shows."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax


@morphax.custom_jvp
def double_jvp(x):
    return x * 2.0


@double_jvp.defjvp
def _double_jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return double_jvp(x), t * 100.0


@morphax.custom_vjp
def double_vjp(x):
    return x * 2.0


double_vjp.defvjp(lambda x: (x * 2.0, None), lambda _, ct: (ct * 100.0,))


@pytest.mark.parametrize("f", [double_jvp, double_vjp], ids=["custom_jvp", "custom_vjp"])
def test_grad_of_jit_uses_the_rule(f):
    x = jnp.float32(1.5)
    for g in (
        morphax.grad(f),
        morphax.grad(morphax.jit(f)),
        morphax.jit(morphax.grad(f)),
        morphax.jit(morphax.grad(morphax.jit(f))),
    ):
        assert float(g(x)) == 100.0
    xs = jnp.arange(3.0)
    np.testing.assert_array_equal(morphax.vmap(morphax.grad(morphax.jit(f)))(xs), [100.0] * 3)
    np.testing.assert_array_equal(
        morphax.grad(lambda v: morphax.jit(morphax.vmap(f))(v).sum())(xs), [100.0] * 3
    )
    np.testing.assert_array_equal(morphax.jit(f)(xs), xs * 2)  # the primal is unchanged


def test_jvp_of_jit_custom_jvp_and_forward_mode_error_for_custom_vjp():
    out, t = morphax.jvp(morphax.jit(double_jvp), (3.0,), (1.0,))
    assert float(out) == 6.0 and float(t) == 100.0
    with pytest.raises(TypeError, match="forward-mode"):
        morphax.jvp(morphax.jit(double_vjp), (3.0,), (1.0,))  # at the call, as in JAX


def test_staged_equation_prints_and_keeps_the_primal_jaxpr():
    text = str(morphax.make_jaxpr(double_jvp)(1.0))
    assert "custom_jvp_call[" in text and "call_jaxpr={" in text and "name=double_jvp" in text
    text = str(morphax.make_jaxpr(double_vjp)(1.0))
    assert "custom_vjp_call[" in text and "bwd=<lambda>" in text


def test_rule_inside_scan_and_while_bodies():
    def body(c, x):
        return c + double_jvp(x), None

    f = lambda xs: lax.scan(body, 0.0, xs)[0]  # noqa: E731
    np.testing.assert_array_equal(morphax.grad(f)(jnp.ones(4)), [100.0] * 4)
    np.testing.assert_array_equal(morphax.grad(morphax.jit(f))(jnp.ones(4)), [100.0] * 4)

    g = lambda x: lax.fori_loop(0, 3, lambda i, c: double_jvp(c), x)  # noqa: E731
    assert float(morphax.jvp(g, (1.0,), (1.0,))[1]) == 100.0**3


@morphax.custom_jvp
def loop_square(x):
    # The primal uses a while_loop, which reverse mode cannot differentiate: only the rule can.
    return lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, c[1] * c[1]), (0, x))[1]


@loop_square.defjvp
def _loop_square_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return loop_square(x), 2.0 * x * t


def test_rule_replaces_a_primal_that_reverse_mode_cannot_handle():
    for g in (morphax.grad(loop_square), morphax.grad(morphax.jit(loop_square))):
        assert float(g(3.0)) == 6.0
    # Second order: the rule itself is differentiated.
    assert float(morphax.grad(morphax.grad(morphax.jit(loop_square)))(3.0)) == 2.0
    h = morphax.jit(morphax.hessian(lambda v: loop_square(v).sum()))(jnp.arange(3.0))
    np.testing.assert_array_equal(h, 2 * np.eye(3))


def test_pytrees_nondiff_argnums_and_symbolic_zeros_under_jit():
    @morphax.custom_jvp
    def f(d):
        return {"s": d["a"] * d["b"], "t": d["a"]}

    @f.defjvp
    def f_rule(primals, tangents):
        (d,), (td,) = primals, tangents
        return f(d), {"s": td["a"] * 7.0 + td["b"] * 5.0, "t": td["a"]}

    d = {"a": jnp.float32(2.0), "b": jnp.float32(3.0)}
    g = morphax.grad(lambda d: morphax.jit(f)(d)["s"])(d)
    assert float(g["a"]) == 7.0 and float(g["b"]) == 5.0

    scale = morphax.custom_vjp(lambda n, x: x * n, nondiff_argnums=(0,))
    scale.defvjp(lambda n, x: (x * n, None), lambda n, _, ct: (ct * n * 10.0,))
    assert float(morphax.grad(morphax.jit(scale, static_argnums=0), argnums=1)(3, 1.0)) == 30.0

    seen = []

    @morphax.custom_jvp
    def pair(x, y):
        return x + y

    @pair.defjvp
    def pair_rule(primals, tangents):
        seen.append(type(tangents[1]).__name__)
        return pair(*primals), tangents[0] + (
            0.0 if type(tangents[1]).__name__ == "SymbolicZero" else tangents[1]
        )

    pair.defjvp(pair_rule, symbolic_zeros=True)
    assert float(morphax.grad(morphax.jit(pair))(1.0, 2.0)) == 1.0
    assert "SymbolicZero" in seen


def test_differentiating_a_closed_over_value_is_an_error():
    def outer(y):
        @morphax.custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda p, t: (f(p[0]), t[0] * y))
        return morphax.jit(f)(2.0)

    with pytest.raises(TypeError, match="closed-over value"):
        morphax.grad(outer)(3.0)
    # Closing over a concrete value is fine.
    y = jnp.float32(4.0)

    @morphax.custom_jvp
    def g(x):
        return x * y

    g.defjvp(lambda p, t: (g(p[0]), t[0] * 9.0))
    assert float(morphax.grad(morphax.jit(g))(1.0)) == 9.0
    assert float(morphax.jit(g)(2.0)) == 8.0


def test_nn_functions_keep_their_rules_under_jit():
    # relu's rule gives 0 at 0 (the primal's max(x, 0) would split the tie).
    x = jnp.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(
        morphax.grad(lambda v: morphax.jit(morphax.nn.relu)(v).sum())(x), [0.0, 0.0, 1.0]
    )


def test_jit_compiles_the_call_jaxpr_instead_of_interpreting_it(monkeypatch):
    from morphax._src.higher_order import custom_calls

    def interpreted(*args, **params):
        raise AssertionError("the compiled function fell back to evaluating the custom call")

    monkeypatch.setattr(custom_calls.custom_jvp_call_p, "impl", interpreted)
    monkeypatch.setattr(custom_calls.custom_vjp_call_p, "impl", interpreted)
    x = jnp.array([-1.0, 2.0])
    f = morphax.jit(lambda v: double_jvp(v) + double_vjp(v) + morphax.nn.relu(v))
    np.testing.assert_array_equal(f(x), [-4.0, 10.0])
    np.testing.assert_array_equal(morphax.jit(morphax.grad(lambda v: double_vjp(v).sum()))(x), [100.0] * 2)


def test_custom_calls_inside_compiled_loops_run_inline(monkeypatch):
    """A scan body (run on the host inside a compiled function) evaluates custom calls inline."""
    from morphax._src.higher_order import custom_calls

    def interpreted(*args, **params):
        raise AssertionError("the loop body fell back to evaluating the custom call")

    monkeypatch.setattr(custom_calls.custom_jvp_call_p, "impl", interpreted)
    f = morphax.jit(lambda xs: lax.scan(lambda c, x: (c + double_jvp(x), None), 0.0, xs)[0])
    assert float(f(jnp.arange(4.0))) == 12.0
