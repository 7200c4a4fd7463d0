"""The jaxpr IR: JAX's exact textual form, constants vs literals, the checker, the evaluator,
and the tracing context (escaped tracers, concretization errors, thread-local traces)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import morphax
from morphax import lax, make_jaxpr
from morphax._src import errors
from morphax._src.core import trace as trace_mod
from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import JaxprTypeError, Var, check_jaxpr, eval_jaxpr


def test_acceptance_jaxpr_text_with_lax():
    f = lambda x, y: lax.add(lax.mul(lax.sin(x), y), 2.0)
    x = np.ones(3, np.float32)
    assert str(make_jaxpr(f)(x, x)) == (
        "{ lambda ; a:f32[3] b:f32[3]. let\n"
        "    c:f32[3] = sin a\n"
        "    d:f32[3] = mul c b\n"
        "    e:f32[3] = add d 2.0:f32[]\n"
        "  in (e,) }"
    )


def test_empty_body_and_multiple_outputs():
    x = np.ones((2,), np.float32)
    assert str(make_jaxpr(lambda a: a)(x)) == "{ lambda ; a:f32[2]. let  in (a,) }"
    text = str(make_jaxpr(lambda a, b: (b, a))(x, np.int32(1)))
    assert text == "{ lambda ; a:f32[2] b:i32[]. let  in (b, a) }"


def test_array_constants_become_constvars_and_scalars_literals():
    c = np.arange(3, dtype=np.float32)
    closed = make_jaxpr(lambda x: lax.add(lax.mul(x, c), np.float32(1.5)))(np.ones(3, np.float32))
    assert str(closed) == (
        "{ lambda a:f32[3]; b:f32[3]. let\n"
        "    c:f32[3] = mul b a\n"
        "    d:f32[3] = add c 1.5:f32[]\n"
        "  in (d,) }"
    )
    assert len(closed.consts) == 1 and closed.consts[0] is c


def test_variable_names_continue_past_z():
    def f(x):
        for _ in range(30):
            x = lax.sin(x)
        return x

    text = str(make_jaxpr(f)(np.float32(0)))
    assert "ba:f32[] = sin z" in text and "in (be,) }" in text


def test_eval_jaxpr_matches_eager():
    f = lambda x, y: lax.add(lax.mul(lax.sin(x), y), 2.0)
    x = np.linspace(-1, 1, 5).astype(np.float32)
    y = np.arange(5, dtype=np.float32)
    closed = make_jaxpr(f)(x, y)
    check_jaxpr(closed.jaxpr)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) * y + 2, rtol=1e-6)
    assert out.dtype == np.float32


def test_checker_catches_bad_types_and_scoping():
    closed = make_jaxpr(lambda x: lax.sin(x))(np.ones(3, np.float32))
    jaxpr = closed.jaxpr
    eqn = jaxpr.eqns[0]
    eqn.outvars[0].aval = ShapedArray((4,), np.float32)
    with pytest.raises(JaxprTypeError, match="sin"):
        check_jaxpr(jaxpr)
    closed = make_jaxpr(lambda x: lax.sin(x))(np.ones(3, np.float32))
    closed.jaxpr.eqns[0].invars[0] = Var(ShapedArray((3,), np.float32))
    with pytest.raises(JaxprTypeError, match="before it is defined"):
        check_jaxpr(closed.jaxpr)


def test_return_shape_and_static_argnums():
    def f(x, n):
        for _ in range(n):
            x = lax.sin(x)
        return {"out": x}

    closed, shape = make_jaxpr(f, static_argnums=1, return_shape=True)(np.ones(2, np.float32), 3)
    assert len(closed.jaxpr.eqns) == 3
    assert shape["out"].shape == (2,) and shape["out"].dtype == np.float32


def test_python_scalar_arguments_are_weak():
    closed = make_jaxpr(lambda x: x)(2.0)
    assert closed.in_avals[0].weak_type and closed.in_avals[0].dtype == np.float32


def test_concretization_error_names_the_fix():
    def f(x):
        if lax.sin(x) > 0:  # Python control flow on a traced value
            return x
        return x

    with pytest.raises(errors.ConcretizationTypeError, match="lax.cond") as info:
        make_jaxpr(f)(np.float32(1))
    assert "static_argnums" in str(info.value)


def test_escaped_tracer_raises_when_used():
    leaked = []

    def f(x):
        leaked.append(x)
        return x

    make_jaxpr(f)(np.ones(2, np.float32))
    with pytest.raises(errors.UnexpectedTracerError, match="escaped|finished"):
        lax.sin(leaked[0])
    with pytest.raises(errors.UnexpectedTracerError):
        make_jaxpr(lambda y: lax.add(y, leaked[0]))(np.ones(2, np.float32))


def test_outer_tracer_in_inner_trace_becomes_constvar():
    def outer(x):
        inner = make_jaxpr(lambda y: lax.mul(x, y))(np.ones(2, np.float32))
        assert len(inner.jaxpr.constvars) == 1
        return lax.sin(x)

    make_jaxpr(outer)(np.ones(2, np.float32))


def test_trace_context_is_thread_local():
    seen = {}
    barrier = threading.Barrier(2)

    def worker():
        barrier.wait()
        seen["worker"] = type(trace_mod.current_trace()).__name__

    def f(x):
        t = threading.Thread(target=worker)
        t.start()
        barrier.wait()
        t.join()
        seen["main"] = type(trace_mod.current_trace()).__name__
        return x

    make_jaxpr(f)(np.float32(1))
    assert seen == {"worker": "EvalTrace", "main": "StagingTrace"}


def test_tracer_rejects_numpy_conversion_and_mutation():
    def f(x):
        with pytest.raises(TypeError, match="__array__"):
            np.asarray(x)
        with pytest.raises(TypeError, match=r"\.at\["):
            x[0] = 1
        with pytest.raises(TypeError, match="unhashable"):
            hash(x)
        return x

    make_jaxpr(f)(np.ones(2, np.float32))


def test_public_package_exports():
    assert morphax.make_jaxpr is make_jaxpr


def test_acceptance_jaxpr_text_with_numpy():
    import morphax.numpy as jnp

    text = str(make_jaxpr(lambda x, y: jnp.sin(x) * y + 2.0)(jnp.ones(3), jnp.ones(3)))
    assert text == (
        "{ lambda ; a:f32[3] b:f32[3]. let\n"
        "    c:f32[3] = sin a\n"
        "    d:f32[3] = mul c b\n"
        "    e:f32[3] = add d 2.0:f32[]\n"
        "  in (e,) }"
    )


def test_weak_type_meets_strong_in_jaxpr():
    import morphax.numpy as jnp

    # A weak value meeting a strong one of the same dtype gets an explicit conversion, as in JAX.
    closed = make_jaxpr(lambda x, s: x + s * 2)(jnp.ones(2, jnp.float32), 3.0)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names == ["mul", "convert_element_type", "add"]
    assert closed.out_avals[0].weak_type is False
