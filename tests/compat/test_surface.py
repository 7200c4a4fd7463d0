"""JAX's semi-public surface on morphax (`jax.core`, `jax.extend`, `jax.interpreters`), as
libraries such as equinox and flax use it: a primitive defined with JAX's conventions works
eagerly and under jit, grad and vmap; trace inspection, partial evaluation and `WrappedFun`
behave as in JAX 0.10. Runs without the libraries."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import core
from morphax._src.core.primitive import registry
from morphax.extend import backend, linear_util
from morphax.extend.core import Primitive, primitives
from morphax.interpreters import ad, batching, mlir
from morphax.interpreters import partial_eval as pe
from morphax.test_util import check_grads

# --------------------------------------------------------------- a primitive with JAX's rules

cube_p = Primitive("test_surface_cube")  # x ** 3 * scale


def cube(x, scale=1.0):
    return cube_p.bind(x, scale=scale)


cube_p.def_impl(lambda x, scale: scale * x * x * x)
cube_p.def_abstract_eval(lambda x, scale: core.ShapedArray(x.shape, x.dtype))


def _cube_jvp(primals, tangents, *, scale):
    (x,), (t,) = primals, tangents
    return cube(x, scale), 3.0 * scale * x * x * t


def _cube_batch(args, dims, *, scale):
    return cube(args[0], scale), dims[0]


ad.primitive_jvps[cube_p] = _cube_jvp
batching.primitive_batchers[cube_p] = _cube_batch
mlir.register_lowering(cube_p, mlir.lower_fun(lambda x, scale: scale * x * x * x, multiple_results=False))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_user_primitive_eager_jit_grad_vmap(dtype):
    x_np = np.array([-1.5, 0.25, 2.0], dtype=dtype)
    with morphax.enable_x64(dtype == np.float64):
        x = jnp.asarray(x_np)
        want = 0.5 * x_np.astype(np.float64) ** 3
        for f in (cube, morphax.jit(cube, static_argnums=1)):
            out = f(x, 0.5)
            assert out.dtype == dtype
            np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
        grad = morphax.grad(lambda v: jnp.sum(cube(v, 0.5)))
        np.testing.assert_allclose(np.asarray(grad(x)), 1.5 * x_np.astype(np.float64) ** 2, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(morphax.jit(grad)(x)), np.asarray(grad(x)), rtol=1e-6)
        xs = jnp.asarray(np.stack([x_np, 2 * x_np]))
        np.testing.assert_allclose(
            np.asarray(morphax.vmap(lambda v: cube(v, 0.5), in_axes=1, out_axes=1)(xs.T)).T,
            0.5 * np.asarray(xs, np.float64) ** 3,
            rtol=1e-6,
        )
        per_row = morphax.jit(morphax.vmap(grad))(xs)
        np.testing.assert_allclose(np.asarray(per_row), 1.5 * np.asarray(xs, np.float64) ** 2, rtol=1e-6)
    if dtype == np.float64:
        with morphax.enable_x64():
            check_grads(lambda v: cube(v, 0.5), (jnp.asarray(x_np),), order=2, modes=("fwd", "rev"))


def test_user_primitive_is_one_equation_in_a_jaxpr():
    jaxpr = morphax.make_jaxpr(lambda v: cube(v, 2.0))(jnp.ones(3))
    (eqn,) = jaxpr.eqns
    assert eqn.primitive is cube_p
    assert eqn.params == {"scale": 2.0}
    assert "test_surface_cube[scale=2.0]" in str(jaxpr)
    # the jaxpr evaluates through jax.core.eval_jaxpr
    (out,) = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, jnp.full(3, 2.0))
    np.testing.assert_allclose(np.asarray(out), 16.0)


# A linear primitive with several results, its transpose and an axis-aware batcher.
split_scale_p = Primitive("test_surface_split_scale")  # x -> (a * x, b * x)
split_scale_p.multiple_results = True
split_scale_p.def_impl(lambda x, a, b: [a * x, b * x])
split_scale_p.def_abstract_eval(lambda x, a, b: [x, x])
seen_axes = []


def _split_transpose(cts, x, *, a, b):
    assert ad.is_undefined_primal(x)
    ct_a, ct_b = (ad.instantiate_zeros(c) for c in cts)
    return [a * ct_a + b * ct_b]


def _split_axis_batch(axis_size, axis_name, trace_type, args, dims, *, a, b):
    seen_axes.append((axis_size, axis_name))
    return split_scale_p.bind(args[0], a=a, b=b), [dims[0], dims[0]]


ad.deflinear2(split_scale_p, _split_transpose)
batching.axis_primitive_batchers[split_scale_p] = _split_axis_batch


def test_linear_primitive_transposes_under_grad_and_batches_with_axis_data():
    def f(x):
        p, q = split_scale_p.bind(jnp.sin(x), a=2.0, b=-3.0)
        return jnp.sum(p * p + q)

    x = jnp.asarray(np.array([0.3, -1.2, 2.0], np.float32))
    xn = np.asarray(x, np.float64)
    want = 8.0 * np.sin(xn) * np.cos(xn) - 3.0 * np.cos(xn)
    np.testing.assert_allclose(np.asarray(morphax.grad(f)(x)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(morphax.jit(morphax.grad(f))(x)), want, rtol=1e-5, atol=1e-6)
    with morphax.enable_x64():
        check_grads(f, (jnp.asarray(xn),), order=1, modes=("fwd", "rev"))
    seen_axes.clear()
    out = morphax.vmap(morphax.grad(f), axis_name="rows")(jnp.stack([x, -x]))
    np.testing.assert_allclose(np.asarray(out)[0], want, rtol=1e-5, atol=1e-6)
    assert seen_axes and seen_axes[0] == (2, "rows")


def test_lowering_runs_as_the_implementation():
    # No def_impl: the Python lowering computes the primitive (a ctx-taking rule here).
    twice_p = Primitive("test_surface_twice")
    twice_p.def_abstract_eval(lambda x: x)
    contexts = []

    def rule(ctx, x):
        contexts.append(ctx)
        return [2 * x]

    mlir.register_lowering(twice_p, rule)
    mlir.register_lowering(twice_p, mlir.lower_fun(lambda x: 3 * x, False), platform="tpu")  # not used
    x = jnp.arange(4.0)
    np.testing.assert_array_equal(np.asarray(twice_p.bind(x)), 2 * np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(morphax.jit(twice_p.bind)(x)), 2 * np.arange(4.0))
    assert contexts[0].avals_out == [core.ShapedArray((4,), np.float32)]
    # a lower_fun lowering of several results on a one-result primitive's declaration
    pair_p = Primitive("test_surface_pair")
    pair_p.multiple_results = True
    pair_p.def_abstract_eval(lambda x: [x, x])
    mlir.register_lowering(pair_p, mlir.lower_fun(lambda x: [x + 1, x - 1], multiple_results=True))
    hi, lo = morphax.jit(pair_p.bind)(x)
    np.testing.assert_array_equal(np.asarray(hi) - np.asarray(lo), 2.0)


def test_user_primitives_may_share_names_and_stay_out_of_the_catalogue():
    a, b = Primitive("test_surface_dup"), Primitive("test_surface_dup")
    assert a is not b and "test_surface_dup" not in registry
    assert "test_surface_cube" not in registry


def test_missing_or_bad_rules_raise_clear_errors():
    p = Primitive("test_surface_norules")
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="Evaluation rule for 'test_surface_norules'"):
        p.bind(jnp.ones(2))
    p = Primitive("test_surface_norules")
    p.def_impl(lambda x: x)
    with pytest.raises(NotImplementedError, match="Abstract evaluation for 'test_surface_norules'"):
        morphax.jit(p.bind)(jnp.ones(2))
    p.def_abstract_eval(lambda x: "not an aval")
    with pytest.raises(TypeError, match="must return a ShapedArray"):
        morphax.jit(p.bind)(jnp.ones(2))
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'test_surface_norules'"):
        morphax.grad(lambda v: jnp.sum(p.bind(v)))(jnp.ones(2))
    with pytest.raises(NotImplementedError, match="register_lowering"):
        mlir.register_lowering(primitives.sin_p, mlir.lower_fun(jnp.sin))


def test_defjvp_partials_and_rule_tables_read_back():
    mulp = Primitive("test_surface_mul")
    mulp.def_impl(lambda x, y: x * y)
    mulp.def_abstract_eval(lambda x, y: x)
    ad.defjvp(mulp, lambda g, x, y: g * y, lambda g, x, y: g * x)
    batching.defbroadcasting(mulp)
    x, y = jnp.asarray(3.0), jnp.asarray(-2.0)
    gx, gy = morphax.grad(lambda a, b: mulp.bind(a, b), argnums=(0, 1))(x, y)
    assert (float(gx), float(gy)) == (-2.0, 3.0)
    np.testing.assert_array_equal(
        np.asarray(morphax.vmap(mulp.bind, (0, None))(jnp.arange(3.0), y)), [0, -2, -4]
    )
    assert mulp in ad.primitive_jvps and primitives.sin_p in ad.primitive_jvps
    assert mulp not in ad.primitive_transposes
    with pytest.raises(NotImplementedError, match="Transpose rule"):
        ad.get_primitive_transpose(mulp)


# ------------------------------------------------------------------------------- jax.core


def test_tracers_avals_and_concreteness():
    seen = {}

    def f(x):
        seen["tracer"] = isinstance(x, core.Tracer)
        seen["aval"] = core.get_aval(x)
        with pytest.raises(core.ConcretizationTypeError):
            core.concrete_or_error(float, x, "in test")
        return x * 2

    morphax.jit(f)(jnp.ones((2, 3)))
    assert seen["tracer"] and seen["aval"] == core.ShapedArray((2, 3), np.float32)
    assert isinstance(seen["aval"], core.AbstractValue)
    assert core.concrete_or_error(int, jnp.asarray(3)) == 3
    # a JVP tracer of a concrete value is concrete
    morphax.grad(lambda v: core.concrete_or_error(float, v) * v)(2.0)
    assert core.valid_jaxtype(np.ones(2)) and core.valid_jaxtype(1.0)
    assert not core.valid_jaxtype("a") and not core.valid_jaxtype(object())


def test_shaped_array_helpers():
    a = core.ShapedArray((2, 5, 3), np.float32)
    assert core.mapped_aval(5, 1, a) == core.ShapedArray((2, 3), np.float32)
    assert core.unmapped_aval(4, 0, a).shape == (4, 2, 5, 3)
    assert core.unmapped_aval(4, None, a) is a
    with pytest.raises(ValueError, match="size"):
        core.mapped_aval(3, 1, a)
    assert core.raise_to_shaped(a) is a
    assert core.primal_dtype_to_tangent_dtype(np.int32) == morphax.dtypes.float0
    assert core.ShapedArray((3,), jnp.int32).to_tangent_aval().dtype == morphax.dtypes.float0


def test_opaque_trace_state_tells_traces_apart():
    outside = core.get_opaque_trace_state(convention="flax")
    assert outside == core.get_opaque_trace_state()
    inside = {}

    def f(x):
        inside["state"] = core.get_opaque_trace_state(convention="nnx")
        inside["again"] = core.get_opaque_trace_state(convention="nnx")
        inside["jit"] = core.unsafe_am_i_under_a_jit()
        inside["top"] = core.find_top_trace(())
        return x

    morphax.jit(f)(1.0)
    assert inside["state"] == inside["again"] and inside["state"] != outside
    assert inside["jit"] and not core.unsafe_am_i_under_a_jit()
    morphax.vmap(lambda x: inside.update(vmap=core.unsafe_am_i_under_a_vmap()) or x)(jnp.ones(2))
    assert inside["vmap"] and not core.unsafe_am_i_under_a_vmap()
    assert inside["top"] is not core.find_top_trace(())


def test_jaxprs_in_params_and_subjaxprs():
    closed = morphax.make_jaxpr(lambda x: morphax.jit(jnp.sin)(x) + 1)(1.0)
    subs = list(core.subjaxprs(closed.jaxpr))
    assert len(subs) == 1 and isinstance(subs[0], core.Jaxpr)
    assert [e.primitive.name for e in subs[0].eqns] == ["sin"]
    np.testing.assert_allclose(np.asarray(core.jaxpr_as_fun(closed)(0.5)[0]), np.sin(0.5) + 1, rtol=1e-6)
    assert isinstance(closed.jaxpr.eqns[0].invars[0], core.Var)


def test_extend_primitives_are_the_ones_in_jaxprs():
    closed = morphax.make_jaxpr(lambda x, y: jnp.sin(x) + y)(1.0, 2.0)
    assert [e.primitive for e in closed.eqns] == [primitives.sin_p, primitives.add_p]
    assert primitives.dot_general_p.name == "dot_general"


# ----------------------------------------------------------------- linear_util, partial_eval


def test_wrapped_fun_transformations_and_aux():
    def scale_out(k, *args):  # a generator transformation with aux
        out = yield args, {}
        yield [o * k for o in out], len(out)

    def add_in(f, c, *args):  # a function-style transformation
        return f(*[a + c for a in args])

    fun = linear_util.wrap_init(lambda x, y: [x * y, x - y])
    fun = linear_util.transformation2(add_in, fun, 1.0)
    fun, aux = linear_util.transformation_with_aux(scale_out, fun, 10.0)
    assert fun.call_wrapped(1.0, 2.0) == [60.0, -10.0]
    assert aux() == 2
    with pytest.raises(linear_util.StoreException):
        linear_util.transformation_with_aux(scale_out, linear_util.wrap_init(lambda: []), 1.0)[1]()


def test_partial_eval_computes_known_outputs_and_stages_the_rest():
    def f(known, unknown):
        k = jnp.cos(known) * 2
        return [k, k * unknown, jnp.ones(2)]

    fun = linear_util.wrap_init(f)
    pvals = [pe.PartialVal.known(jnp.asarray(0.5)), pe.PartialVal.unknown(core.ShapedArray((2,), np.float32))]
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(fun, pvals)
    k_pv, ku_pv, ones_pv = out_pvals
    assert k_pv.is_known() and ones_pv.is_known() and not ku_pv.is_known()
    np.testing.assert_allclose(np.asarray(k_pv.get_known()), 2 * np.cos(0.5), rtol=1e-6)
    assert ku_pv[0] == core.ShapedArray((2,), np.float32) and ku_pv[1] is None
    (out,) = core.eval_jaxpr(jaxpr, consts, jnp.asarray([1.0, 3.0]))
    np.testing.assert_allclose(np.asarray(out), 2 * np.cos(0.5) * np.array([1.0, 3.0]), rtol=1e-6)
    jaxpr2, out_avals, consts2 = pe.trace_to_jaxpr_dynamic(fun, [core.ShapedArray((), np.float32)] * 2)
    assert [a.shape for a in out_avals] == [(), (), (2,)]


def test_dce_jaxpr_drops_unused_outputs_and_inputs():
    closed = morphax.make_jaxpr(lambda x, y: (jnp.sin(x), jnp.cos(y)))(1.0, 2.0)
    new, used = pe.dce_jaxpr(closed.jaxpr, [True, False])
    assert used == [True, False] and [e.primitive.name for e in new.eqns] == ["sin"]


# ------------------------------------------------------------------------ backend and others


def test_backend_describes_the_cpu_platform():
    b = backend.get_backend()
    assert b.platform == "cpu" and b.devices() == morphax.devices()
    assert backend.get_default_device() == morphax.devices()[0]
    assert set(backend.backends()) == {"cpu"}
    with pytest.raises(RuntimeError, match="cpu"):
        backend.get_backend("gpu")


def test_registered_exclusions_are_hidden_from_filtered_tracebacks(tmp_path):
    from morphax._src import traceback_util

    lib = tmp_path / "fake_library.py"
    lib.write_text("def call(f, x):\n    return f(x)\n")
    namespace = {}
    exec(compile(lib.read_text(), str(lib), "exec"), namespace)

    def bad(x):
        raise ValueError("boom")

    wrapped = traceback_util.api_boundary(lambda x: namespace["call"](bad, x))
    traceback_util.register_exclusion(str(tmp_path))
    try:
        with pytest.raises(ValueError, match="boom") as info:
            wrapped(1)
    finally:
        traceback_util._exclude_paths.remove(str(tmp_path))
    files = [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]
    assert not any(f.startswith(str(tmp_path)) for f in files)
    assert any(f == __file__ for f in files)


def test_layout_format_and_constraint():
    from morphax.experimental.layout import Format, Layout, with_layout_constraint

    lay = Layout((0, 1))
    assert lay == Layout([0, 1]) and hash(lay) == hash(Layout((0, 1)))
    sharding = morphax.sharding.SingleDeviceSharding(morphax.devices()[0])
    fmt = Format(lay, sharding)
    assert fmt == Format(Layout((0, 1)), sharding) and Format().layout is None
    with pytest.raises(ValueError, match="concrete sharding"):
        Format(lay)
    x = jnp.ones((2, 3))
    assert with_layout_constraint(x, lay) is x
    with pytest.raises(ValueError, match="rank"):
        with_layout_constraint(jnp.ones(3), lay)


def test_key_arrays_are_arrays_and_io_callback_runs_for_its_effect():
    from morphax.experimental import io_callback

    key = morphax.random.key(0)
    assert isinstance(key, morphax.Array) and isinstance(key, jnp.ndarray)
    morphax.jit(lambda k: (isinstance(k, morphax.Array) or pytest.fail("tracer of a key")) and k)(key)
    calls = []

    def log(x):
        calls.append(np.asarray(x).copy())
        return np.asarray(x) * 2

    spec = morphax.ShapeDtypeStruct((3,), np.float32)

    @morphax.jit
    def f(x):
        io_callback(log, spec, x)  # result unused: still called
        return io_callback(log, spec, x + 1, ordered=True)

    out = f(jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), 2 * (np.arange(3.0) + 1))
    assert len(calls) == 2
    calls.clear()
    out = morphax.vmap(lambda x: io_callback(log, spec, x))(jnp.ones((2, 3)))
    assert len(calls) == 2 and out.shape == (2, 3)
    with pytest.raises(ValueError, match="ordered IO callback"):
        morphax.vmap(lambda x: io_callback(log, spec, x, ordered=True))(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="do not support JVP"):
        morphax.grad(lambda x: io_callback(log, morphax.ShapeDtypeStruct((), np.float32), x))(1.0)


def test_hijax_names_load_but_do_not_bind():
    from morphax.experimental import hijax

    class NewThing(hijax.HiPrimitive):
        pass

    hijax.control_flow_allowed_effects.add_type(core.Effect)
    with pytest.raises(NotImplementedError, match="high-level types"):
        NewThing("new_thing").bind(1.0)


def test_monitoring_listeners_see_recorded_events():
    from morphax import monitoring

    seen = []
    listeners = [
        (
            monitoring.register_event_listener,
            monitoring.unregister_event_listener,
            lambda *a, **k: seen.append(a + (k,)),
        ),
        (
            monitoring.register_event_duration_secs_listener,
            monitoring.unregister_event_duration_listener,
            lambda *a, **k: seen.append(a),
        ),
    ]
    for register, _, fn in listeners:
        register(fn)
    try:
        monitoring.record_event("/flax/save", step=3)
        monitoring.record_event_duration_secs("/flax/save", 0.5)
        monitoring.record_scalar("/unheard", 1.0)  # no scalar listener: nothing
    finally:
        for _, unregister, fn in listeners:
            unregister(fn)
    assert seen == [("/flax/save", {"step": 3}), ("/flax/save", 0.5)]
    monitoring.record_event("/after")
    assert len(seen) == 2
    with pytest.raises(ValueError, match="not a registered"):
        monitoring.unregister_event_listener(print)


def test_user_primitive_inside_control_flow():
    sin2_p = Primitive("test_surface_sin2")  # 2 sin(x)
    sin2_p.def_impl(lambda x: 2 * jnp.sin(x))
    sin2_p.def_abstract_eval(lambda x: x)
    ad.defjvp(sin2_p, lambda g, x: 2 * jnp.cos(x) * g)
    batching.defvectorized(sin2_p)

    def f(x):
        return morphax.lax.scan(lambda c, xi: (c + sin2_p.bind(xi * c), None), x[0], x)[0]

    def f_np(x):
        c = x[0]
        for xi in x:
            c = c + 2 * np.sin(xi * c)
        return c

    xn = np.linspace(0.1, 1.0, 5)
    x = jnp.asarray(xn, np.float32)
    np.testing.assert_allclose(float(f(x)), f_np(xn), rtol=1e-5)
    np.testing.assert_allclose(float(morphax.jit(f)(x)), f_np(xn), rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(morphax.vmap(morphax.jit(f))(jnp.stack([x, 2 * x]))), [f_np(xn), f_np(2 * xn)], rtol=1e-5
    )
    with morphax.enable_x64():
        check_grads(f, (jnp.asarray(xn),), order=2, modes=("fwd", "rev"))
    got = morphax.jit(lambda v: morphax.lax.fori_loop(0, 3, lambda i, c: sin2_p.bind(c), v))(x)
    want = xn
    for _ in range(3):
        want = 2 * np.sin(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    got = morphax.jit(lambda v: morphax.lax.cond(v[0] > 0, sin2_p.bind, lambda u: u, v))(x)
    np.testing.assert_allclose(np.asarray(got), 2 * np.sin(xn), rtol=1e-5)


def test_call_primitive_applies_its_function():
    from morphax.extend.core import CallPrimitive, array_types, call_impl

    call_p = CallPrimitive("test_surface_call")
    fun = linear_util.wrap_init(lambda x, y: [x * y, x + y])
    assert call_impl(fun, 2.0, 3.0) == [6.0, 5.0]
    grads = morphax.grad(lambda x: call_p.bind(fun, x, 3.0)[0])(2.0)
    assert float(grads) == 3.0
    out = morphax.jit(lambda x: call_p.bind(lambda a: [jnp.sin(a)], x)[0])(0.5)
    np.testing.assert_allclose(float(out), np.sin(0.5), rtol=1e-6)
    assert np.ndarray in array_types and np.float32 in array_types


def test_reevaluating_a_jaxpr_with_impl_and_bind_params():
    # equinox's finalise_jaxpr walks a jaxpr: built-in equations are rebound with
    # get_bind_params(params), user primitives replaced by a call of their impl on tracers.
    closed = morphax.make_jaxpr(lambda v: jnp.sin(cube(v, 2.0)) + 1.0)(1.0)

    def finalise(*args):
        env = dict(zip(closed.jaxpr.invars, args))
        read = lambda a: a.val if isinstance(a, core.Literal) else env[a]  # noqa: E731
        for eqn in closed.jaxpr.eqns:
            ins = [read(a) for a in eqn.invars]
            params = eqn.primitive.get_bind_params(eqn.params)
            if eqn.primitive is cube_p:
                out = eqn.primitive.impl(*ins, **params)
            else:
                out = eqn.primitive.bind(*ins, **params)
            env[eqn.outvars[0]] = out
        return read(closed.jaxpr.outvars[0])

    finalised = morphax.make_jaxpr(finalise)(1.0)
    names = [e.primitive.name for e in finalised.eqns]
    assert "test_surface_cube" not in names and names[-2:] == ["sin", "add"]
    np.testing.assert_allclose(float(morphax.jit(finalise)(0.5)), np.sin(2 * 0.5**3) + 1, rtol=1e-6)
    assert float(cube_p.impl(jnp.asarray(2.0), scale=1.0)) == 8.0  # arrays in, arrays out


def test_flatten_transformations_of_wrapped_funs():
    from morphax._src.extend.linear_util import flatten_fun, flatten_fun_nokwargs

    def f(a, b, scale=1.0):
        return {"sum": (a["x"] + b) * scale, "b": b}

    args, kwargs = ({"x": 1.0}, 2.0), {"scale": 3.0}
    leaves, in_tree = morphax.tree_util.tree_flatten((args, kwargs))
    flat, out_tree = flatten_fun(linear_util.wrap_init(f), in_tree)
    outs = flat.call_wrapped(*leaves)
    assert morphax.tree_util.tree_unflatten(out_tree(), outs) == {"sum": 9.0, "b": 2.0}
    leaves, in_tree = morphax.tree_util.tree_flatten(args)
    flat, out_tree = flatten_fun_nokwargs(linear_util.wrap_init(f), in_tree)
    outs = flat.call_wrapped(*leaves)
    assert morphax.tree_util.tree_unflatten(out_tree(), outs) == {"sum": 3.0, "b": 2.0}
    # partial evaluation of a flattened function (what flax's lazy_init does)
    pvals = [pe.PartialVal.known(1.0), pe.PartialVal.unknown(core.ShapedArray((), np.float32))]
    flat, out_tree = flatten_fun_nokwargs(
        linear_util.wrap_init(lambda a, b: (a * 2, a + b)), morphax.tree_util.tree_structure((0, 0))
    )
    _, out_pvals, _ = pe.trace_to_jaxpr_nounits(flat, pvals)
    assert out_pvals[0].is_known() and float(out_pvals[0].get_known()) == 2.0 and not out_pvals[1].is_known()


def test_defbilinear_and_defreducer():
    outer_p = Primitive("test_surface_outer")  # outer product: bilinear
    outer_p.def_impl(lambda x, y: x[:, None] * y[None, :])
    outer_p.def_abstract_eval(lambda x, y: core.ShapedArray(x.shape + y.shape, x.dtype))
    ad.defbilinear(
        outer_p,
        lambda ct, x, y: ct @ y,  # d/dx of <ct, x y^T>
        lambda ct, x, y: ct.T @ x,
    )
    rng = np.random.default_rng(0)
    x, y, w = rng.normal(size=3), rng.normal(size=2), rng.normal(size=(3, 2))
    f = lambda a, b: jnp.sum(outer_p.bind(a, b) * w)  # noqa: E731
    with morphax.enable_x64():
        gx, gy = morphax.grad(f, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(y))
        np.testing.assert_allclose(np.asarray(gx), w @ y, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gy), w.T @ x, rtol=1e-12)
        check_grads(f, (jnp.asarray(x), jnp.asarray(y)), order=2, modes=("fwd", "rev"))

    rowsum_p = Primitive("test_surface_rowsum")
    rowsum_p.def_impl(lambda x, axes: jnp.sum(x, axis=axes))
    rowsum_p.def_abstract_eval(
        lambda x, axes: core.ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)
    )
    batching.defreducer(rowsum_p)
    xs = jnp.asarray(rng.normal(size=(4, 3, 2)), np.float32)
    got = morphax.vmap(lambda v: rowsum_p.bind(v, axes=(1,)), in_axes=2)(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(xs).sum(axis=1).T, rtol=1e-6)


def test_dce_rules_table_is_morphax_dce_slot():
    from morphax.interpreters import partial_eval as pe_mod

    scan = morphax.make_jaxpr(lambda v: morphax.lax.scan(lambda c, x: (c + x, x), v, jnp.ones(2)))(1.0)
    scan_p = scan.eqns[-1].primitive
    assert scan_p in pe_mod.dce_rules and pe_mod.dce_rules[scan_p] is scan_p.dce_rule
    assert cube_p not in pe_mod.dce_rules


def test_effectful_primitive_is_kept_when_unused():
    calls = []
    log_p = Primitive("test_surface_log")
    log_p.def_impl(lambda x: calls.append(float(x)) or x)

    class LogEffect(core.Effect):
        pass

    log_p.def_effectful_abstract_eval(lambda x: (x, {LogEffect()}))

    @morphax.jit
    def f(x):
        log_p.bind(x)  # result unused: an effect keeps it
        return x + 1

    assert float(f(2.0)) == 3.0 and calls == [2.0]
    jaxpr = morphax.make_jaxpr(lambda x: log_p.bind(x))(1.0)
    assert any(isinstance(e, LogEffect) for e in jaxpr.effects)


def test_equation_effects():
    closed = morphax.make_jaxpr(lambda x: morphax.debug.callback(lambda v: None, x) or x * 2)(1.0)
    callback_eqn, mul_eqn = closed.eqns
    assert callback_eqn.effects and mul_eqn.effects == set()
    assert mul_eqn.replace(effects=set()).params == mul_eqn.params


def test_rules_receive_tuples_as_in_jax():
    seen = {}
    p = Primitive("test_surface_tuples")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)

    def jvp(primals, tangents):
        seen["jvp"] = (type(primals), type(tangents))
        return p.bind(*primals), tangents[0]

    def batch(vals, dims):
        seen["batch"] = (type(vals), type(dims))
        return p.bind(*vals), dims[0]

    ad.primitive_jvps[p] = jvp
    batching.primitive_batchers[p] = batch
    morphax.jvp(p.bind, (1.0,), (1.0,))
    morphax.vmap(p.bind)(jnp.ones(2))
    assert seen == {"jvp": (tuple, tuple), "batch": (tuple, tuple)}


def test_lib_reports_the_jax_api_version():
    import morphax.lib

    assert morphax.lib.__version__ == "0.10.2"  # jax.lib.__version__ under JAX 0.10.2
