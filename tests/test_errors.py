"""Errors that teach: tracer errors name the traced function, the argument a value came from and
the fix; escaped tracers name their function; tracebacks hide morphax's internal frames."""

from __future__ import annotations

import os
import traceback

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import errors, lax
from morphax._src import traceback_util

SRC_DIR = os.path.dirname(os.path.abspath(traceback_util.__file__)) + os.sep


# ------------------------------------------------------------------------------ classes


def test_class_hierarchy_matches_jax():
    assert issubclass(errors.ConcretizationTypeError, TypeError)
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.TracerIntegerConversionError, TypeError)
    assert not issubclass(errors.TracerIntegerConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.TracerArrayConversionError, TypeError)
    assert issubclass(errors.UnexpectedTracerError, Exception)
    assert issubclass(errors.NonConcreteBooleanIndexError, IndexError)
    assert morphax.errors is errors


def test_nonconcrete_boolean_index_error_is_shared():
    from morphax._src.numpy import _index_plan, indexing

    assert indexing.NonConcreteBooleanIndexError is errors.NonConcreteBooleanIndexError
    assert _index_plan.NonConcreteBooleanIndexError is errors.NonConcreteBooleanIndexError
    with pytest.raises(errors.NonConcreteBooleanIndexError, match="argument x") as info:
        morphax.jit(lambda x: x[x > 0])(jnp.ones(3))
    assert "size=" in str(info.value)


# ----------------------------------------------------------------------- concretization


def _branchy(x):
    if x > 0:
        return x
    return -x


def test_bool_under_jit_names_function_argument_and_fixes():
    with pytest.raises(errors.TracerBoolConversionError) as info:
        morphax.jit(_branchy)(1.0)
    msg = str(info.value)
    assert isinstance(info.value, errors.ConcretizationTypeError)
    assert "Attempted boolean conversion of traced array with shape bool[]" in msg
    assert f"tracing the function _branchy at {__file__}:" in msg
    assert "for jit" in msg
    assert "depends on the value of the argument x." in msg
    assert "static_argnums=0" in msg and "static_argnames='x'" in msg
    assert "lax.cond" in msg and "lax.while_loop" in msg and "jnp.where" in msg


def test_static_argnums_fix_works():
    f = morphax.jit(_branchy, static_argnums=0)
    assert f(2.0) == 2.0 and f(-3.0) == 3.0


def test_bool_under_make_jaxpr_names_transformation():
    with pytest.raises(errors.TracerBoolConversionError) as info:
        morphax.make_jaxpr(_branchy)(np.float32(1))
    msg = str(info.value)
    assert "for make_jaxpr" in msg and "the argument x" in msg
    assert "make_jaxpr(_branchy, static_argnums=0)" in msg


def test_argument_names_follow_pytree_paths():
    def f(x, params):
        if params["w"] > 0:
            return x
        return x

    with pytest.raises(errors.TracerBoolConversionError, match=r"the argument params\['w'\]\.") as info:
        morphax.jit(f)(1.0, {"w": 2.0, "b": 3.0})
    assert "static_argnums=1" in str(info.value)

    def g(*args, **kwargs):
        if args[1][0] + kwargs["z"] > 0:
            return 1.0
        return 0.0

    with pytest.raises(errors.TracerBoolConversionError) as info:
        morphax.jit(g)(1.0, (2.0, 3.0), z=4.0)
    msg = str(info.value)
    assert "the values of the arguments args[1][0] and kwargs['z']." in msg  # as JAX 0.10.2
    assert "static_argnums=1, static_argnames='z'" in msg


def test_static_arguments_do_not_shift_names():
    def f(n, x, y):
        if y > n:
            return x
        return y

    with pytest.raises(errors.TracerBoolConversionError, match="the argument y\\.") as info:
        morphax.jit(f, static_argnums=0)(1, 2.0, 3.0)
    assert "static_argnums=2" in str(info.value)


def test_value_not_from_arguments():
    def f(x):
        if jnp.ones(()) > 0:
            return x
        return x

    with pytest.raises(errors.TracerBoolConversionError, match="does not depend on the function's arguments"):
        morphax.jit(f)(1.0)


def test_int_range_float_and_array_conversions():
    with pytest.raises(errors.ConcretizationTypeError, match="`int` function") as info:
        morphax.jit(lambda x: int(x))(1)
    assert type(info.value) is errors.ConcretizationTypeError
    assert "the argument x" in str(info.value)
    with pytest.raises(errors.ConcretizationTypeError, match="`float` function"):
        morphax.jit(lambda x: float(x))(1.0)

    def loop(n):
        return sum(range(n))

    with pytest.raises(errors.TracerIntegerConversionError, match="__index__") as info:
        morphax.jit(loop)(3)
    msg = str(info.value)
    assert "the argument n" in msg and "jnp.take" in msg and "lax.dynamic_slice" in msg

    with pytest.raises(errors.TracerArrayConversionError, match="__array__") as info:
        morphax.jit(lambda x: np.asarray(x))(jnp.ones(3))
    assert "the argument x" in str(info.value) and "morphax.numpy" in str(info.value)


def test_value_inside_cond_branch_reports_outer_argument():
    def f(x):
        def branch(_):
            if x > 0:
                return x
            return x

        return lax.cond(True, branch, branch, 0.0)

    with pytest.raises(errors.TracerBoolConversionError, match="function f at .* the argument x"):
        morphax.jit(f)(1.0)


def test_python_control_flow_works_under_grad_without_jit():
    f = lambda x: x**2 if x > 0 else -x  # noqa: E731
    assert float(morphax.grad(f)(3.0)) == 6.0
    assert float(morphax.grad(f)(-3.0)) == -1.0
    assert float(morphax.grad(lambda x: x * int(x))(2.0)) == 2.0
    out, tangent = morphax.jvp(f, (3.0,), (1.0,))
    assert float(out) == 9.0 and float(tangent) == 6.0


def test_grad_under_jit_reports_the_jit_argument():
    with pytest.raises(errors.TracerBoolConversionError, match="function _branchy at .* the argument x"):
        morphax.jit(morphax.grad(_branchy))(1.0)


def test_batched_values_say_vmap():
    with pytest.raises(errors.TracerBoolConversionError) as info:
        morphax.vmap(_branchy)(jnp.ones(3))
    msg = str(info.value)
    assert "batched" in msg and "vmap" in msg and "jnp.where" in msg
    with pytest.raises(errors.ConcretizationTypeError, match="vmap"):
        morphax.vmap(lambda x: int(x))(jnp.ones(3))


# ---------------------------------------------------------------------- escaped tracers


def test_escaped_tracer_names_its_function():
    leaked = []

    def leaky(x):
        leaked.append(x)
        return x

    morphax.jit(leaky)(1.0)
    with pytest.raises(errors.UnexpectedTracerError) as info:
        jnp.sin(leaked[0])
    msg = str(info.value)
    assert f"leaky at {__file__}:" in msg and "traced for jit" in msg
    assert "escaped" in msg and "global" in msg and "Return the value" in msg


def test_escaped_tracer_of_other_transformations():
    leaked = []

    def leaky(x):
        leaked.append(x)
        return x * 2

    morphax.vmap(leaky)(jnp.ones(3))
    with pytest.raises(errors.UnexpectedTracerError, match="vmap"):
        jnp.sin(leaked[0])


# ------------------------------------------------------------------- traceback filtering


def _user_raises(x):
    raise ValueError("boom from user code")


def _frames(exc):
    return [f.filename for f in traceback.extract_tb(exc.__traceback__)]


def _internal(files):
    return [f for f in files if os.path.abspath(f).startswith(SRC_DIR)]


def test_traceback_hides_internal_frames_by_default():
    with pytest.raises(ValueError, match="boom") as info:
        morphax.jit(_user_raises)(1.0)
    files = _frames(info.value)
    assert files.count(__file__) >= 2  # the call site and the user's function
    assert not _internal(files)
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1 and "MORPHAX_TRACEBACK_FILTERING=off" in notes[0]


def test_traceback_filtering_off(monkeypatch):
    with morphax.config._override("jax_traceback_filtering", "off"):
        with pytest.raises(ValueError) as info:
            morphax.jit(_user_raises)(1.0)
    assert _internal(_frames(info.value))
    assert not getattr(info.value, "__notes__", None)

    monkeypatch.setenv("MORPHAX_TRACEBACK_FILTERING", "off")
    with pytest.raises(ValueError) as info:
        morphax.jit(_user_raises)(1.0)
    files = _frames(info.value)
    assert _internal(files) and __file__ in files


def test_nested_boundaries_filter_once_and_keep_user_frames():
    def outer(x):
        return morphax.jit(_user_raises)(x) * 2

    for call in (
        lambda: morphax.grad(outer)(1.0),
        lambda: morphax.vmap(morphax.jit(outer))(jnp.ones(2)),
        lambda: morphax.make_jaxpr(outer)(1.0),
    ):
        with pytest.raises(ValueError) as info:
            call()
        files = _frames(info.value)
        assert not _internal(files)
        assert files.count(__file__) >= 3  # call site, outer, _user_raises
        assert len(info.value.__notes__) == 1


def test_tracer_errors_are_filtered_too():
    with pytest.raises(errors.TracerBoolConversionError) as info:
        morphax.jit(_branchy)(1.0)
    files = _frames(info.value)
    assert not _internal(files) and __file__ in files


def test_boundary_on_any_function_and_untouched_errors_elsewhere():
    with pytest.raises(ValueError) as info:
        traceback_util.api_boundary(_user_raises)(0)
    assert _frames(info.value) == [__file__, __file__]
    assert "removed its internal frames" in info.value.__notes__[0]
    # A plain eager error never passes a boundary: nothing is added.
    with pytest.raises(TypeError) as info:
        lax.add(jnp.ones(2), "a")
    assert not getattr(info.value, "__notes__", None)


# --------------------------------------------------------------------- compare with JAX


def _messages(lib, fn, arg):
    try:
        lib.jit(fn)(arg)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    raise AssertionError("no error raised")


KEY_PHRASES = [
    "Attempted boolean conversion of traced array with shape",
    "The __index__() method was called on traced array with shape",
    "Abstract tracer value encountered where concrete value is expected: traced array with shape",
    "The numpy.ndarray conversion method __array__() was called on traced array with shape",
    "The problem arose with the `int` function.",
    "The error occurred while tracing the function",
    "This concrete value was not available in Python because it depends on the value of the argument x.",
]


@pytest.mark.parametrize(
    "fn",
    [_branchy, lambda x: list(range(x)), lambda x: int(x), lambda x: np.asarray(x)],
    ids=["bool", "index", "int", "array"],
)
def test_messages_share_key_phrases_with_jax(fn):
    jax = pytest.importorskip("jax")
    name, msg = _messages(morphax, fn, 1)
    jname, jmsg = _messages(jax, fn, 1)
    assert name == jname
    for phrase in KEY_PHRASES:
        assert (phrase in msg) == (phrase in jmsg), phrase
