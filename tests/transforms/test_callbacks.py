"""Host callbacks and debugging: debug.print / debug.callback / pure_callback under every
transformation, error propagation, named_call / named_scope, and the jax_debug_nans flag.
Printed text is compared with JAX's when it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import morphax as mx
import morphax.numpy as jnp
from morphax._src.higher_order.callbacks import debug_callback_p, pure_callback_p

F32 = np.float32


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


# ------------------------------------------------------------------------------------ debug.print


def test_print_eager(capsys):
    mx.debug.print("x={} y={y}", jnp.arange(3.0), y=2)
    mx.debug.print("{a:.2f} and {b}", a=jnp.float32(2.5), b=True)
    mx.debug.print("no args")
    assert _lines(capsys) == ["x=[0. 1. 2.] y=2", "2.50 and True", "no args"]


def test_print_static_and_pytree_args(capsys):
    mx.debug.print("{} {} {}", "text", None, {"a": jnp.ones(2)})
    (line,) = _lines(capsys)
    assert line.startswith("text None {'a': Array([1., 1.], dtype=float32)")


def test_print_jit_runs_at_every_call_not_at_trace(capsys):
    @mx.jit
    def f(x):
        mx.debug.print("jit {}", x)
        return x * 2

    mx.make_jaxpr(f)(1.0)
    assert _lines(capsys) == []
    np.testing.assert_allclose(np.asarray(f(1.0)), 2.0)
    np.testing.assert_allclose(np.asarray(f(2.0)), 4.0)
    assert _lines(capsys) == ["jit 1.0", "jit 2.0"]


def test_print_program_order(capsys):
    @mx.jit
    def g(x):
        mx.debug.print("in jit a {}", x)
        y = x + 1
        mx.debug.print("in jit b {}", y)
        return y

    mx.debug.print("before")
    g(1.0).block_until_ready()
    mx.debug.print("after")
    assert _lines(capsys) == ["before", "in jit a 1.0", "in jit b 2.0", "after"]


def test_print_is_staged_with_side_effects():
    jaxpr = mx.make_jaxpr(lambda x: mx.debug.print("{}", x))(1.0)
    assert [e.primitive for e in jaxpr.jaxpr.eqns] == [debug_callback_p]
    assert debug_callback_p.has_side_effects and not pure_callback_p.has_side_effects


def test_print_vmap_once_per_element(capsys):
    mx.vmap(lambda x, y: mx.debug.print("x={} y={}", x, y), in_axes=(0, None))(jnp.arange(2.0), jnp.ones(2))
    assert _lines(capsys) == ["x=0.0 y=[1. 1.]", "x=1.0 y=[1. 1.]"]


def test_print_vmap_batch_axis_and_nesting(capsys):
    x = jnp.arange(6.0).reshape(2, 3)
    mx.vmap(lambda r: mx.debug.print("{}", r), in_axes=1)(x)
    assert _lines(capsys) == ["[0. 3.]", "[1. 4.]", "[2. 5.]"]
    mx.vmap(mx.vmap(lambda v: mx.debug.print("{}", v)))(x)
    assert sorted(float(s) for s in _lines(capsys)) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_print_vmap_unbatched_prints_once(capsys):
    mx.vmap(lambda x: (mx.debug.print("c {}", 7), x)[1])(jnp.arange(3.0))
    assert _lines(capsys) == ["c 7"]


def test_print_vmap_under_jit(capsys):
    f = mx.jit(mx.vmap(lambda x: (mx.debug.print("v {}", x), x * 2)[1]))
    f(jnp.arange(2.0)).block_until_ready()
    f(jnp.arange(2.0)).block_until_ready()
    assert _lines(capsys) == ["v 0.0", "v 1.0"] * 2


def _printing_square(x):
    mx.debug.print("p {}", x)
    return x * x


def test_print_grad_jvp_linearize_primal_only(capsys):
    np.testing.assert_allclose(np.asarray(mx.grad(_printing_square)(3.0)), 6.0)
    assert _lines(capsys) == ["p 3.0"]
    mx.jvp(_printing_square, (3.0,), (1.0,))
    assert _lines(capsys) == ["p 3.0"]
    _, f_lin = mx.linearize(_printing_square, 3.0)
    assert _lines(capsys) == ["p 3.0"]
    np.testing.assert_allclose(np.asarray(f_lin(1.0)), 6.0)
    assert _lines(capsys) == []  # the linear function holds tangent work only


def test_print_grad_of_jit_and_jit_of_grad(capsys):
    mx.grad(mx.jit(_printing_square))(3.0).block_until_ready()
    assert _lines(capsys) == ["p 3.0"]
    g = mx.jit(mx.grad(_printing_square))
    g(2.0).block_until_ready()
    g(2.0).block_until_ready()
    assert _lines(capsys) == ["p 2.0", "p 2.0"]


def test_print_vmap_of_grad(capsys):
    out = mx.vmap(mx.grad(_printing_square))(jnp.arange(2.0))
    np.testing.assert_allclose(np.asarray(out), [0.0, 2.0])
    assert _lines(capsys) == ["p 0.0", "p 1.0"]


# --------------------------------------------------------------------------------- debug.callback


def test_callback_receives_arrays_and_kwargs():
    seen = []
    out = mx.debug.callback(
        lambda a, b, *, c: seen.append((a, b, c)) or "ignored", jnp.ones(2), 3, c=jnp.int32(4)
    )
    assert out is None
    ((a, b, c),) = seen
    assert isinstance(a, mx.Array) and isinstance(b, mx.Array) and isinstance(c, mx.Array)
    np.testing.assert_array_equal(np.asarray(a), np.ones(2, F32))
    assert int(b) == 3 and b.weak_type and int(c) == 4 and c.dtype == np.int32


def test_callback_values_under_jit_and_vmap():
    seen = []

    @mx.jit
    def f(x):
        mx.debug.callback(lambda v: seen.append(np.asarray(v)), x * 2)
        return x

    f(jnp.arange(3.0)).block_until_ready()
    np.testing.assert_array_equal(seen.pop(), [0.0, 2.0, 4.0])
    mx.vmap(f)(jnp.arange(3.0)).block_until_ready()
    assert [float(v) for v in seen] == [0.0, 2.0, 4.0]


def test_callback_not_callable():
    with pytest.raises(TypeError, match="callable"):
        mx.debug.callback(3, 1.0)


def test_breakpoint_not_implemented():
    with pytest.raises(NotImplementedError):
        mx.debug.breakpoint()


# ----------------------------------------------------------------------------------- pure_callback


def _sin_callback(x):
    # As in JAX, the callback receives Arrays (immutable, and cheap to view with np.asarray).
    assert isinstance(x, mx.Array)
    return np.sin(np.asarray(x))


def test_pure_callback_eager_and_jit():
    x = np.linspace(-1, 1, 5, dtype=F32)
    spec = mx.ShapeDtypeStruct(x.shape, F32)
    want = np.sin(x)
    np.testing.assert_allclose(np.asarray(mx.pure_callback(_sin_callback, spec, x)), want)
    f = mx.jit(lambda v: mx.pure_callback(_sin_callback, spec, v) + 1)
    np.testing.assert_allclose(np.asarray(f(x)), want + 1, rtol=1e-6)
    jaxpr = mx.make_jaxpr(lambda v: mx.pure_callback(_sin_callback, spec, v))(x)
    assert [e.primitive for e in jaxpr.jaxpr.eqns] == [pure_callback_p]


def test_pure_callback_pytrees_and_kwargs():
    def cb(a, *, scale):
        return {"sum": np.sum(a["x"]) * scale, "pair": (a["x"] * 2, np.int32(1))}

    shapes = {
        "sum": mx.ShapeDtypeStruct((), F32),
        "pair": (mx.ShapeDtypeStruct((3,), F32), mx.ShapeDtypeStruct((), np.int32)),
    }
    out = mx.jit(lambda v: mx.pure_callback(cb, shapes, {"x": v}, scale=2.0))(jnp.arange(3.0))
    assert float(out["sum"]) == 6.0
    np.testing.assert_array_equal(np.asarray(out["pair"][0]), [0.0, 2.0, 4.0])
    assert out["pair"][1].dtype == np.int32


def test_pure_callback_canonicalizes_float64_results():
    out = mx.pure_callback(lambda: np.ones(3), mx.ShapeDtypeStruct((3,), F32))
    assert out.dtype == np.float32


@pytest.mark.parametrize(
    "cb,match",
    [
        (lambda x: np.ones(2, F32), r"shape for return value #0: Expected: \(3,\), Actual: \(2,\)"),
        (lambda x: np.ones(3, np.int32), "dtype for return value #0: Expected: float32, Actual: int32"),
        (lambda x: (x, x), "Mismatched number of outputs from callback. Expected: 1, Actual: 2"),
    ],
)
def test_pure_callback_result_mismatch(cb, match):
    spec = mx.ShapeDtypeStruct((3,), F32)
    with pytest.raises(RuntimeError, match=match):
        mx.pure_callback(cb, spec, jnp.ones(3))
    with pytest.raises(RuntimeError, match=match):
        mx.jit(lambda x: mx.pure_callback(cb, spec, x))(jnp.ones(3)).block_until_ready()


def _recording(calls):
    def cb(x, y):
        calls.append((np.shape(x), np.shape(y)))
        return (x * y + 1).astype(F32)

    return cb


@pytest.mark.parametrize(
    "method,shapes",
    [
        ("sequential", [((2,), (2,))] * 3),
        ("sequential_unrolled", [((2,), (2,))] * 3),
        ("expand_dims", [((3, 2), (1, 2))]),
        ("broadcast_all", [((3, 2), (3, 2))]),
        ("legacy_vectorized", [((3, 2), (2,))]),
    ],
)
@pytest.mark.parametrize("jit", [False, True])
def test_pure_callback_vmap_methods(method, shapes, jit):
    calls = []
    x = np.arange(6, dtype=F32).reshape(2, 3)  # batched along axis 1
    y = np.array([2.0, 3.0], F32)

    def f(a, b):
        return mx.pure_callback(_recording(calls), mx.ShapeDtypeStruct((2,), F32), a, b, vmap_method=method)

    g = mx.vmap(f, in_axes=(1, None))
    out = (mx.jit(g) if jit else g)(x, y)
    np.testing.assert_allclose(np.asarray(out), x.T * y + 1)
    assert calls == shapes


def test_pure_callback_nested_vmap_sequential():
    x = np.arange(6, dtype=F32).reshape(2, 3)
    f = lambda v: mx.pure_callback(np.exp, mx.ShapeDtypeStruct((), F32), v, vmap_method="sequential")  # noqa: E731
    np.testing.assert_allclose(np.asarray(mx.vmap(mx.vmap(f))(x)), np.exp(x), rtol=1e-6)
    g = lambda v: mx.pure_callback(np.exp, mx.ShapeDtypeStruct((), F32), v, vmap_method="expand_dims")  # noqa: E731
    np.testing.assert_allclose(np.asarray(mx.vmap(mx.vmap(g))(x)), np.exp(x), rtol=1e-6)


def test_pure_callback_vmap_empty_batch():
    f = lambda v: mx.pure_callback(lambda a: a * 2, mx.ShapeDtypeStruct((), F32), v, vmap_method="sequential")  # noqa: E731
    assert mx.vmap(f)(jnp.ones(0)).shape == (0,)


def test_pure_callback_vmap_method_errors():
    spec = mx.ShapeDtypeStruct((), F32)
    with pytest.raises(NotImplementedError, match="vmap_method=None"):
        mx.vmap(lambda v: mx.pure_callback(np.sin, spec, v))(jnp.ones(3))
    with pytest.raises(ValueError, match="bogus"):
        mx.pure_callback(np.sin, spec, 1.0, vmap_method="bogus")
    # Unbatched operands do not need a vmap_method.
    out = mx.vmap(lambda v: v + mx.pure_callback(np.sin, spec, 0.0), in_axes=0)(jnp.ones(2))
    np.testing.assert_allclose(np.asarray(out), [1.0, 1.0])


def test_pure_callback_not_differentiable():
    spec = mx.ShapeDtypeStruct((), F32)
    f = lambda v: mx.pure_callback(np.sin, spec, v)  # noqa: E731
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        mx.grad(f)(1.0)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        mx.jvp(f, (1.0,), (1.0,))
    # A non-differentiated operand is fine.
    np.testing.assert_allclose(
        np.asarray(mx.grad(lambda a, b: a * f(b))(2.0, 1.0)), np.sin(F32(1.0)), rtol=1e-6
    )


def test_pure_callback_with_custom_jvp():
    spec = mx.ShapeDtypeStruct((), F32)

    @mx.custom_jvp
    def host_sin(x):
        return mx.pure_callback(np.sin, spec, x)

    @host_sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), mx.pure_callback(np.cos, spec, x) * t

    np.testing.assert_allclose(np.asarray(mx.grad(host_sin)(0.5)), np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mx.jit(mx.grad(host_sin))(0.5)), np.cos(0.5), rtol=1e-6)


def test_pure_callback_bad_arguments():
    with pytest.raises(TypeError, match="not a valid morphax type"):
        mx.pure_callback(np.sin, mx.ShapeDtypeStruct((), F32), "text")
    with pytest.raises(TypeError, match=r"\.shape and \.dtype"):
        mx.pure_callback(np.sin, 3, 1.0)


# ----------------------------------------------------------------------------------- errors


class Boom(Exception):
    pass


def _raise(*_):
    raise Boom("boom")


def test_callback_exceptions_eagerly():
    # JAX 0.10.2: an eager debug callback is called directly, so its exception propagates; an
    # eager pure_callback or io_callback runs as a compiled program, whose failure is a
    # JaxRuntimeError ending with the callback's exception line (wrong results too).
    with pytest.raises(Boom):
        mx.debug.callback(_raise, 1.0)
    with pytest.raises(mx.errors.JaxRuntimeError, match=r"CpuCallback error(.|\n)*Boom: boom$") as info:
        mx.pure_callback(_raise, mx.ShapeDtypeStruct((), F32), 1.0)
    assert info.value.__cause__ is None
    with pytest.raises(mx.errors.JaxRuntimeError, match="Boom: boom"):
        mx.experimental.io_callback(_raise, mx.ShapeDtypeStruct((), F32), 1.0)
    with pytest.raises(
        mx.errors.JaxRuntimeError, match=r"RuntimeError: Incorrect output shape .*Actual: \(3,\)"
    ):
        mx.pure_callback(lambda x: np.ones(3, F32), mx.ShapeDtypeStruct((), F32), 1.0)


def test_callback_exceptions_under_jit_are_runtime_errors():
    @mx.jit
    def f(x):
        mx.debug.callback(_raise, x)
        return x + 1

    with pytest.raises(mx.errors.JaxRuntimeError, match="Boom: boom"):
        f(1.0).block_until_ready()
    g = mx.jit(lambda x: mx.pure_callback(_raise, mx.ShapeDtypeStruct((), F32), x))
    with pytest.raises(mx.errors.JaxRuntimeError, match="Boom: boom"):
        np.asarray(g(1.0))
    h = mx.jit(
        lambda x: mx.lax.cond(
            x > 0, lambda: mx.pure_callback(_raise, mx.ShapeDtypeStruct((), F32), x), lambda: x
        )
    )
    with pytest.raises(mx.errors.JaxRuntimeError, match="Boom: boom"):
        h(1.0)


# ------------------------------------------------------------------------- named_call, named_scope


def test_named_call_and_scope():
    def f(x):
        return x * 2

    h = mx.named_call(f, name="foo")
    assert h.__name__ == "f"
    assert float(h(3.0)) == 6.0
    # Like current JAX, no call equation: the body is inlined.
    assert str(mx.make_jaxpr(h)(1.0)) == str(mx.make_jaxpr(f)(1.0))
    with mx.named_scope("block"):
        assert float(mx.jit(h)(1.0)) == 2.0
    with pytest.raises(TypeError, match="must be a string"):
        with mx.named_scope(3):
            pass


# ------------------------------------------------------------------------------------ debug_nans


@pytest.fixture
def debug_nans():
    with mx.config._override("jax_debug_nans", True):
        yield


def test_debug_nans_off_by_default():
    assert mx.config.debug_nans is False and mx.config.jax_debug_infs is False
    assert np.isnan(float(jnp.log(-1.0)))
    assert np.isnan(float(mx.jit(lambda x: jnp.sqrt(x))(-1.0)))


def test_debug_nans_eager_names_primitive(debug_nans):
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
        jnp.log(-1.0)
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in div"):
        jnp.zeros(3) / jnp.zeros(3)
    assert float(jnp.float32(1.0) / 0) == np.inf  # infs are not NaNs
    assert int(jnp.int32(7) // 2) == 3


def _jit_fast_path_checks_floats():
    # The eager-caller jit path runs the executable without bind; it needs
    # `if eager._float_checks: eager.check_call_outputs(name, jaxpr, args, outs)` after executing.
    with mx.config._override("jax_debug_nans", True):
        try:
            mx.jit(lambda x: jnp.log(x))(-1.0)
        except FloatingPointError:
            return True
    return False


def test_debug_nans_jit_names_inner_primitive(debug_nans):
    f = mx.jit(lambda x: jnp.sqrt(x * 2) + 1)
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in sqrt"):
        f(-1.0)
    assert float(f(2.0)) == 3.0
    g = mx.jit(lambda x: mx.jit(lambda y: jnp.log(y))(x) * 2)
    with pytest.raises(FloatingPointError, match=r"encountered in log"):
        g(-1.0)


def test_debug_nans_under_grad(debug_nans):
    with pytest.raises(FloatingPointError, match="nan"):
        mx.grad(lambda x: jnp.sqrt(x))(-1.0)


def test_debug_infs():
    with mx.config._override("jax_debug_infs", True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            jnp.float32(1.0) / 0
        assert np.isnan(float(jnp.log(-1.0)))
    assert float(jnp.float32(1.0) / 0) == np.inf


# ------------------------------------------------------------------------------- JAX as an oracle


def _programs(lib, lnp):
    def vm(x):
        lib.debug.print("vm {} {}", x, x * 2)
        return x

    def sq(x):
        lib.debug.print("sq {x}", x=x)
        return x * x

    def run():
        lib.debug.print("a={} b={b} c={}", lnp.arange(4.0).reshape(2, 2), 3, b=lnp.int32(5))
        lib.debug.print("{:.3f} {} {}", lnp.float32(1.0) / 3, True, "s")
        lib.jit(sq)(2.0).block_until_ready()  # jitted prints may run on a stream
        lib.jit(sq)(2.0).block_until_ready()  # jitted prints may run on a stream
        lib.vmap(vm)(lnp.arange(3.0))
        lib.grad(sq)(3.0)
        lib.jvp(sq, (1.5,), (1.0,))
        lib.vmap(lambda x, y: lib.debug.print("{} {}", x, y), in_axes=(0, None))(lnp.arange(2.0), lnp.ones(3))
        lib.debug.print("{}", (lnp.int32(1), 2.0))

    return run


def test_printed_text_matches_jax(capsys):
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp

    _programs(jax, jjnp)()
    jax.effects_barrier()
    want = _lines(capsys)
    _programs(mx, jnp)()
    got = _lines(capsys)
    assert got == want


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all", "legacy_vectorized"])
def test_pure_callback_vmap_calls_match_jax(method):
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp

    x = np.arange(6, dtype=F32).reshape(3, 2)
    y = np.ones(2, F32)
    ours, theirs = [], []
    got = mx.vmap(
        lambda a, b: mx.pure_callback(
            _recording(ours), mx.ShapeDtypeStruct((2,), F32), a, b, vmap_method=method
        ),
        in_axes=(0, None),
    )(x, y)
    want = jax.vmap(
        lambda a, b: jax.pure_callback(
            _recording(theirs), jax.ShapeDtypeStruct((2,), jjnp.float32), a, b, vmap_method=method
        ),
        in_axes=(0, None),
    )(x, y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    assert ours == theirs


def test_callback_exception_in_jitted_function_without_outputs_surfaces():
    def boom(x):
        raise ValueError("raised by the host callback")

    @mx.jit
    def f(x):
        mx.debug.callback(boom, x)

    with pytest.raises(mx.errors.JaxRuntimeError, match="ValueError: raised by the host callback"):
        f(jnp.ones(3))


def test_jitted_prints_keep_program_order_with_queued_work(capsys):
    big = mx.jit(lambda x: jnp.sum(jnp.sin(x)))
    printer = mx.jit(lambda x: mx.debug.print("second {}", x))
    mx.debug.print("first")
    out = big(jnp.ones(3_000_000))
    printer(jnp.float32(1.0))
    out.block_until_ready()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "first" and lines[1].startswith("second")
