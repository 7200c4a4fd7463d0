"""`morphax.custom_derivatives.linear_call`: JAX's docstring examples, eager / jit (NumPy and C
backends) / vmap values against NumPy and loops, forward mode through the function, reverse mode
and `linear_transpose` through the custom transpose (transposes that deliberately differ from
the true one show which function ran), pytrees of linear arguments, transposes of transposes,
finite-difference gradients, dead-code elimination, and the errors."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.custom_derivatives import linear_call
from morphax.test_util import check_grads


def _transpose(f, x_example):
    """JAX's docstring helper: the transpose of `f` (one linear input) as a function."""

    def transposed(y):
        (x,) = morphax.linear_transpose(f, x_example)(y)
        return x

    return transposed


def _div(r, x):
    return x / r


def _div_t(r, t):
    return t / r


def _div_add(x, denom):
    return x + linear_call(_div, _div_t, denom, x)


def _custom_id(x):
    def f(_, x):
        return x

    def t(_, t):
        return 7.0

    return linear_call(f, t, (), x)


def _matvec(a, x):
    return jnp.matmul(a, x)


def _matvec_t(a, c):
    return jnp.matmul(a.T, c)


def _rng_args(dtype, m=3, n=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, n)).astype(dtype), rng.standard_normal(n).astype(dtype)


# ------------------------------------------------------------------------- docstring examples


def test_docstring_div_add():
    out = _div_add(9.0, 3.0)
    assert float(out) == 12.0 and out.dtype == np.float32 and out.weak_type
    custom = _transpose(partial(_div_add, denom=3.0), 1.0)(18.0)
    reference = _transpose(lambda x: x + x / 3.0, 1.0)(18.0)
    assert float(custom) == float(reference) == 24.0


def test_docstring_custom_id_alternates_fun_and_transpose():
    assert float(_custom_id(1.0)) == 1.0
    t1 = _transpose(_custom_id, 1.0)
    t2 = _transpose(t1, 1.0)
    t3 = _transpose(t2, 1.0)
    assert [float(t1(1.0)), float(t2(1.0)), float(t3(1.0))] == [7.0, 1.0, 7.0]
    assert t1(1.0).dtype == np.float32


def test_make_jaxpr_shows_one_linear_call_equation():
    closed = morphax.make_jaxpr(_div_add)(9.0, 3.0)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names == ["linear_call", "add"]
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "linear_call"]
    assert eqn.params["num_res"] == 1 and eqn.params["num_callee_consts"] == 0
    text = str(closed)
    assert "linear_call[" in text and "callee={ lambda" in text and "div" in text
    assert "transpose_thunk=_div_t" in text and "num_res=1" in text
    # The operands are the residual (b) then the linear argument (a), as in JAX.
    assert "] b a" in text


def test_transpose_is_traced_only_when_needed():
    calls = []

    def t(r, c):
        calls.append(1)
        return c / r

    f = lambda x: linear_call(_div, t, 2.0, x)  # noqa: E731
    f(3.0)
    morphax.jit(f)(3.0)
    morphax.jvp(f, (3.0,), (1.0,))
    morphax.vmap(f)(jnp.arange(3.0))
    assert calls == []
    assert float(morphax.grad(f)(3.0)) == 0.5
    assert calls


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("x64", [False, True])
def test_eager_and_jit_values_match_numpy(x64):
    with morphax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        a, x = _rng_args(dtype)
        f = lambda a, x: linear_call(_matvec, _matvec_t, a, x)  # noqa: E731
        want = a.astype(np.float64) @ x.astype(np.float64)
        for got in (f(a, x), morphax.jit(f)(a, x)):
            assert got.dtype == dtype
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5 if not x64 else 1e-12)
        ct = np.arange(3, dtype=dtype)
        (xt,) = morphax.linear_transpose(partial(f, a), x)(ct)
        np.testing.assert_allclose(
            np.asarray(xt), a.T.astype(np.float64) @ ct, rtol=1e-5 if not x64 else 1e-12
        )


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_jit_backends(backend):
    from morphax._src.compiler.backends import get_backend

    if not get_backend(backend).available():
        pytest.skip(f"no {backend} backend here")
    a, x = _rng_args(np.float32)
    wrong_t = lambda a, c: 2.0 * jnp.matmul(a.T, c)  # noqa: E731

    def loss(x, a):
        return jnp.sum(jnp.sin(linear_call(_matvec, wrong_t, a, x)))

    got = morphax.jit(loss, backend=backend)(x, a)
    np.testing.assert_allclose(float(got), np.sum(np.sin(a @ x)), rtol=1e-5)
    g = morphax.jit(morphax.grad(loss), backend=backend)(x, a)
    np.testing.assert_allclose(np.asarray(g), 2.0 * a.T @ np.cos(a @ x), rtol=1e-5)
    if backend == "c":
        # The call is inlined: the program is as many native segments as without it.
        plain = lambda x, a: jnp.sum(jnp.sin(jnp.matmul(a, x)))  # noqa: E731
        segments = lambda h: morphax.jit(h, backend="c").lower(x, a).compile().num_segments  # noqa: E731
        assert segments(loss) == segments(plain)


# ----------------------------------------------------------------------------------- vmap


def test_vmap_matches_a_loop():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3, 4)).astype(np.float32)
    x = rng.standard_normal((4, 5)).astype(np.float32)  # batched along axis 1
    f = lambda a, x: linear_call(_matvec, _matvec_t, a, x)  # noqa: E731
    got = morphax.vmap(f, in_axes=(0, 1))(a, x)
    want = np.stack([np.asarray(f(a[i], x[:, i])) for i in range(5)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # Only the residual batched, then only the linear argument.
    got = morphax.vmap(f, in_axes=(0, None))(a, x[:, 0])
    np.testing.assert_allclose(np.asarray(got), np.stack([a[i] @ x[:, 0] for i in range(5)]), rtol=1e-5)
    got = morphax.vmap(f, in_axes=(None, 1))(a[0], x)
    np.testing.assert_allclose(np.asarray(got), np.stack([a[0] @ x[:, i] for i in range(5)]), rtol=1e-5)


def test_vmap_of_reverse_mode_uses_the_custom_transpose():
    r = np.arange(1.0, 4.0, dtype=np.float32)
    wrong_t = lambda r, c: 7.0 * c / r  # noqa: E731  (the true transpose is c / r)

    def f(x, r):
        return linear_call(_div, wrong_t, r, x)

    want = 7.0 / r
    np.testing.assert_allclose(np.asarray(morphax.vmap(morphax.grad(f))(np.ones(3, np.float32), r)), want)
    loss = lambda x, r: morphax.vmap(f)(x, r).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(morphax.grad(loss)(np.ones(3, np.float32), r)), want, rtol=1e-6)
    # An unbatched linear argument under vmap: its cotangent is the sum over the batch.
    loss = lambda x, r: morphax.vmap(lambda r: f(x, r))(r).sum()  # noqa: E731
    np.testing.assert_allclose(float(morphax.grad(loss)(2.0, r)), np.sum(want), rtol=1e-6)


def test_nested_vmap_and_a_batched_closure():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    s = rng.standard_normal(3).astype(np.float32)

    def f(x, s):
        return linear_call(lambda r, x: x * s, lambda r, c: c * s, (), x)

    got = morphax.vmap(morphax.vmap(f, in_axes=(0, 0)), in_axes=(0, None))(x, s)
    np.testing.assert_allclose(np.asarray(got), x * s[None, :, None], rtol=1e-6)


# ------------------------------------------------------------------------------------ autodiff


def test_jvp_sends_linear_tangents_through_fun():
    a, x = _rng_args(np.float32)
    v = np.ones(4, np.float32)
    calls = []

    def fun(a, x):
        calls.append(1)
        return jnp.matmul(a, x)

    out, out_t = morphax.jvp(lambda x: linear_call(fun, _matvec_t, a, x), (x,), (v,))
    np.testing.assert_allclose(np.asarray(out), a @ x, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out_t), a @ v, rtol=1e-5)
    # In a traced JVP the tangent goes through a second linear_call with the same callee.
    closed = morphax.make_jaxpr(
        lambda x, v: morphax.jvp(lambda x: linear_call(fun, _matvec_t, a, x), (x,), (v,))
    )(x, v)
    eqns = [e for e in closed.jaxpr.eqns if e.primitive.name == "linear_call"]
    assert len(eqns) == 2 and eqns[0].params["callee"] is eqns[1].params["callee"]


def test_grad_and_vjp_call_the_custom_transpose():
    calls = []

    def wrong_t(r, c):  # twice the true transpose, so its use shows in the result
        calls.append(1)
        return 2.0 * c / r

    f = lambda x: linear_call(_div, wrong_t, 4.0, x)  # noqa: E731
    assert float(morphax.grad(f)(3.0)) == 0.5 and calls
    out, pullback = morphax.vjp(f, 3.0)
    assert float(out) == 0.75 and float(pullback(1.0)[0]) == 0.5
    assert float(morphax.jit(morphax.grad(f))(3.0)) == 0.5
    assert float(morphax.grad(morphax.jit(f))(3.0)) == 0.5
    # The transposed equation in a traced gradient is a linear_call of the transpose.
    closed = morphax.make_jaxpr(morphax.grad(f))(3.0)
    (eqn,) = [
        e
        for e in closed.jaxpr.eqns
        if e.primitive.name == "linear_call" and e.outvars[0] in closed.jaxpr.outvars
    ]
    assert "transpose_thunk=_div" in str(closed) and eqn.params["transpose_thunk"].__name__ == "_div"


def test_inside_control_flow_and_checkpoint():
    wrong_t = lambda r, c: 2.0 * c / r  # noqa: E731  (twice the true transpose)
    lc = lambda x, r: linear_call(_div, wrong_t, r, x)  # noqa: E731

    def body(c, r):
        return lc(c, r), c

    loss = lambda x: morphax.lax.scan(body, x, jnp.array([1.0, 2.0]))[0]  # noqa: E731
    assert float(morphax.grad(loss)(3.0)) == 2.0  # (2 / 1) * (2 / 2)
    branch = lambda x: morphax.lax.cond(x > 0, lambda x: lc(x, 4.0), lambda x: x, x)  # noqa: E731
    assert float(morphax.grad(branch)(3.0)) == 0.5
    g = morphax.grad(morphax.checkpoint(lambda x: jnp.sin(lc(x, 4.0))))(3.0)
    np.testing.assert_allclose(float(g), 0.5 * np.cos(0.75), rtol=1e-6)
    # Forward over reverse: the transposed call's tangents go through the transpose.
    assert float(morphax.hessian(lambda x: lc(x, 4.0) ** 2)(3.0)) == 0.25


def test_transpose_of_transpose_calls_fun_again():
    fun_calls, t_calls = [], []

    def fun(r, x):
        fun_calls.append(1)
        return 3.0 * x

    def t(r, c):
        t_calls.append(1)
        return 5.0 * c  # not the true transpose (3 c): shows which function runs

    f = lambda x: linear_call(fun, t, (), x)  # noqa: E731
    once = _transpose(f, 1.0)
    assert float(once(1.0)) == 5.0 and t_calls
    n = len(fun_calls)
    twice = _transpose(once, 1.0)
    assert float(twice(1.0)) == 3.0 and len(fun_calls) > n
    assert float(_transpose(twice, 1.0)(1.0)) == 5.0
    # Reverse over reverse: grad of a function built from the transposed call.
    assert float(morphax.grad(lambda y: once(y))(2.0)) == 3.0


@pytest.mark.parametrize("x64", [False, True])
def test_check_grads_against_finite_differences(x64):
    with morphax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        a, x = _rng_args(dtype, seed=3)

        def f(x):
            y = linear_call(_matvec, _matvec_t, a, x)
            return jnp.sum(jnp.tanh(y) * y)

        check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_pytrees_of_linear_args():
    r = np.float32(2.0)

    def fun(r, x):
        return {"a": x[0] * r, "b": x[1] + x[2]}

    def fun_t(r, c):
        return (c["a"] * r, c["b"], c["b"])

    x = (np.float32(1.0), np.arange(2, dtype=np.float32), np.ones(2, np.float32))
    out = linear_call(fun, fun_t, r, x)
    assert set(out) == {"a", "b"}
    np.testing.assert_allclose(np.asarray(out["b"]), [1.0, 2.0])
    cts = {"a": np.float32(3.0), "b": np.array([1.0, -1.0], np.float32)}
    (got,) = morphax.linear_transpose(lambda x: linear_call(fun, fun_t, r, x), x)(cts)
    assert float(got[0]) == 6.0
    np.testing.assert_allclose(np.asarray(got[1]), [1.0, -1.0])
    np.testing.assert_allclose(np.asarray(got[2]), [1.0, -1.0])
    # Differentiating with respect to one linear argument leaves the others' tangents zero.
    g = morphax.grad(lambda x1: linear_call(fun, fun_t, r, (x[0], x1, x[2]))["b"].sum())(x[1])
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0])
    out_t = morphax.jvp(
        lambda x0: linear_call(fun, fun_t, r, (x0, x[1], x[2]))["a"], (x[0],), (np.float32(1.0),)
    )[1]
    assert float(out_t) == 2.0
    vm = morphax.vmap(lambda x0: linear_call(fun, fun_t, r, (x0, x[1], x[2])))(np.arange(3, dtype=np.float32))
    np.testing.assert_allclose(np.asarray(vm["a"]), [0.0, 2.0, 4.0])
    np.testing.assert_allclose(np.asarray(vm["b"]), np.tile([1.0, 2.0], (3, 1)))


def test_closure_over_a_traced_value():
    def g(x, s):
        return linear_call(lambda r, x: x * s, lambda r, c: c * s * 10.0, (), x)

    assert float(morphax.jit(g)(2.0, 3.0)) == 6.0
    assert float(morphax.grad(g)(2.0, 3.0)) == 30.0
    assert float(morphax.jit(morphax.grad(g))(2.0, 3.0)) == 30.0


# ---------------------------------------------------------------------------------- compiler


def test_dce_drops_an_unused_call_and_keeps_a_used_one_whole():
    from morphax._src.passes.dce import dce

    f = lambda x, r: linear_call(_div, _div_t, r, x)  # noqa: E731
    unused = morphax.make_jaxpr(lambda x, r: (f(x, r), x)[1])(1.0, 2.0)
    assert [e.primitive.name for e in dce(unused).jaxpr.eqns] == []
    used = dce(morphax.make_jaxpr(lambda x, r: f(x, r) * 2.0)(1.0, 2.0))
    (eqn,) = [e for e in used.jaxpr.eqns if e.primitive.name == "linear_call"]
    assert len(eqn.invars) == 2


# ------------------------------------------------------------------------------------- errors


def test_transpose_with_the_wrong_structure():
    f = lambda x: linear_call(lambda r, x: x[0] + x[1], lambda r, c: c, (), x)  # noqa: E731
    assert float(f((1.0, 2.0))) == 3.0  # the transpose is only checked when it is used
    with pytest.raises(
        TypeError, match=r"linear_call: fun_transpose <lambda> must return a pytree with the structure"
    ):
        morphax.linear_transpose(f, (1.0, 2.0))(1.0)
    with pytest.raises(
        TypeError, match=r"PyTreeDef\(\*\) where linear_args has structure PyTreeDef\(\(\*, \*\)\)"
    ):
        morphax.grad(f)((1.0, 2.0))


def test_transpose_with_the_wrong_shape_or_dtype():
    f = lambda x: linear_call(lambda r, x: x.sum(), lambda r, c: c, (), x)  # noqa: E731
    with pytest.raises(ValueError, match=r"for linear_args \(type f32\[3\]\) it returned type f32\[\]"):
        morphax.linear_transpose(f, jnp.ones(3))(1.0)
    g = lambda x: linear_call(lambda r, x: x, lambda r, c: c.astype(jnp.int32), (), x)  # noqa: E731
    with pytest.raises(
        TypeError, match=r"dtypes, but for linear_args \(type f32\[\]\) it returned type i32\[\]"
    ):
        morphax.grad(g)(1.0)
    h = lambda x: linear_call(lambda r, x: x, lambda r, c: (c, c), (), {"w": x})  # noqa: E731
    with pytest.raises(TypeError, match="structure"):
        morphax.grad(lambda x: h(x)["w"])(1.0)


def test_differentiating_the_residuals_is_an_error():
    with pytest.raises(TypeError, match="linear_call: differentiation of _div with respect to residual_args"):
        morphax.grad(lambda r: linear_call(_div, _div_t, r, 2.0))(3.0)
    with pytest.raises(TypeError, match="with respect to residual_args"):
        morphax.jvp(lambda r: linear_call(_div, _div_t, r, 2.0), (3.0,), (1.0,))
    # stop_gradient on the residual is the way out.
    g = morphax.grad(lambda x: linear_call(_div, _div_t, morphax.lax.stop_gradient(x), 2.0))(3.0)
    assert float(g) == 0.0
    with pytest.raises(TypeError, match="with respect to a value it closes over"):
        morphax.grad(lambda s: linear_call(lambda r, x: x * s, lambda r, c: c * s, (), 2.0))(3.0)
    with pytest.raises(TypeError, match="cannot transpose _div with respect to residual_args"):
        morphax.linear_transpose(lambda r: linear_call(_div, _div_t, r, 2.0), 1.0)(1.0)
