"""Array creation (`array`, fills, `eye`, `arange`, `linspace`...) against NumPy, with JAX's
dtypes and weak types, traced through make_jaxpr, plus bad-input errors."""

from __future__ import annotations

import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.errors import ConcretizationTypeError

# The shared helpers live beside this file (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches, assert_same, check, staged  # noqa: E402

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)

# ------------------------------------------------------------------------------------- array


@pytest.mark.parametrize(
    "obj,dtype,weak",
    [
        (3.0, F32, True),
        (3, I32, True),
        (True, np.bool_, False),
        (1j, np.complex64, True),
        ([1, 2, 3], I32, False),
        ([1, 2.5], F32, False),
        ([[1, 2], [3, 4]], I32, False),
        ([True, False], np.bool_, False),
        ([1, True], I32, False),
        ([np.float16(1), 2.0], np.float16, False),
        ([np.int8(1), 2], np.int8, False),
        ([np.int8(1), 2.0], F32, False),
        ((1.0, (2.0)), F32, False),
        ([], F32, False),
        (np.arange(3, dtype=np.float64), F32, False),
        (np.arange(3, dtype=np.int64), I32, False),
        (np.arange(3, dtype=np.uint8), np.uint8, False),
        (np.float64(2.5), F32, False),
        (np.ones(2, ml_dtypes.bfloat16), ml_dtypes.bfloat16, False),
    ],
)
def test_array_dtype_inference(obj, dtype, weak):
    got = jnp.array(obj)
    assert_matches(got, np.array(obj), dtype=dtype, weak=weak)
    got2 = jnp.asarray(obj)
    assert got2.dtype == got.dtype and got2.weak_type == weak


def test_array_of_arrays_keeps_weak_type_and_stacks():
    w = jnp.array(2.0)
    assert jnp.array(w).weak_type
    assert not jnp.array(w, dtype=jnp.float32).weak_type
    x = jnp.arange(3)
    got = jnp.array([x, x * 2, np.array([7, 8, 9], np.int16)])
    assert_matches(got, np.array([[0, 1, 2], [0, 2, 4], [7, 8, 9]]), dtype=np.int32)
    got = jnp.array([[x[0], 5], [1.5, x[2]]])
    assert_matches(got, np.array([[0, 5], [1.5, 2]]), dtype=F32)


def test_array_of_tracers_traces():
    def f(x, y):
        return jnp.array([[x, y], [y, 1.0]])

    x, y = jnp.float32(1.5), jnp.float32(-2.0)
    out = staged(f, x, y)
    assert_matches(out, np.array([[1.5, -2.0], [-2.0, 1.0]]), dtype=F32)
    assert_same(out, f(x, y))


def test_array_dtype_and_ndmin():
    assert_matches(jnp.array([1.7, -2.2], dtype=jnp.int32), np.array([1, -2]), dtype=I32)
    assert_matches(jnp.array([0, 2], dtype=bool), np.array([False, True]), dtype=np.bool_)
    assert_matches(jnp.array(3.0, ndmin=2), np.array(3.0, ndmin=2), dtype=F32)
    assert_matches(jnp.array([1, 2], ndmin=3), np.array([1, 2], ndmin=3), dtype=I32)
    assert_matches(jnp.array(jnp.arange(2), ndmin=2), np.arange(2)[None], dtype=I32)


def test_array_copies_host_input():
    host = np.arange(3.0, dtype=np.float32)
    a = jnp.array(host)
    host[0] = 100.0
    assert float(a[0]) == 0.0


def test_array_bad_inputs():
    with pytest.raises(TypeError, match="None"):
        jnp.array([1.0, None])
    with pytest.raises(TypeError):
        jnp.array("abc")
    with pytest.raises(TypeError):
        jnp.array(np.array(["a", "b"]))
    with pytest.raises(ValueError):
        jnp.array([[1, 2], [3]])
    with pytest.raises(OverflowError):
        jnp.array([2**40])
    with pytest.raises(NotImplementedError, match="order"):
        jnp.array([1.0], order="F")


def test_explicit_64bit_dtype_warns_in_x32():
    with pytest.warns(UserWarning, match="float64"):
        out = jnp.array([1.0], dtype=jnp.float64)
    assert out.dtype == F32
    with pytest.warns(UserWarning, match="int64"):
        out = jnp.zeros(2, dtype=np.int64)
    assert out.dtype == I32
    # Python types name the default dtype and do not warn.
    assert jnp.zeros(2, dtype=float).dtype == F32
    assert jnp.zeros(2, dtype=int).dtype == I32


def test_asarray_returns_arrays_unchanged():
    x = jnp.arange(3.0)
    assert jnp.asarray(x) is x
    assert_matches(jnp.asarray(x, dtype=jnp.int8), np.arange(3), dtype=np.int8)


def test_array_under_x64():
    with morphax.config._override("jax_enable_x64", True):
        assert jnp.array(1.5).dtype == np.float64
        assert jnp.array([1, 2]).dtype == np.int64
        assert jnp.array(np.arange(3.0)).dtype == np.float64
    assert jnp.array(1.5).dtype == F32


# -------------------------------------------------------------------------------------- fills


@pytest.mark.parametrize("shape", [(), 3, (0,), (2, 3), [2, 1, 2], np.int64(4)])
@pytest.mark.parametrize("dtype", [None, jnp.int8, np.float16, bool, jnp.complex64, jnp.bfloat16])
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_fills(name, shape, dtype):
    want = getattr(np, name if name != "empty" else "zeros")(
        shape, dtype=dtype if dtype is not None else np.float32
    )
    got = check(lambda: getattr(jnp, name)(shape, dtype=dtype), lambda: want)
    assert not got.weak_type


@pytest.mark.parametrize(
    "fill,dtype,expected,weak",
    [
        (1.0, None, F32, True),
        (2, None, I32, True),
        (True, None, np.bool_, False),
        (np.float16(1.5), None, np.float16, False),
        (2.5, jnp.int32, I32, False),
        (3, np.uint8, np.uint8, False),
    ],
)
def test_full(fill, dtype, expected, weak):
    got = check(
        lambda: jnp.full((2, 3), fill, dtype=dtype),
        lambda: np.full((2, 3), fill, dtype=expected),
        dtype=expected,
        weak=weak,
    )
    assert got.weak_type == weak


def test_full_array_fill_and_traced_fill():
    check(lambda v: jnp.full((2, 3), v), lambda v: np.full((2, 3), v), np.arange(3, dtype=np.float32))
    check(lambda v: jnp.full((4,), v), lambda v: np.full((4,), v), np.float32(2.5) * np.ones((), np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        jnp.full((2, 2), jnp.arange(3))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
@pytest.mark.parametrize("dtype", [None, jnp.int16, np.complex64])
@pytest.mark.parametrize("shape", [None, (3, 1), 2])
def test_like(name, dtype, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float16)
    npname = "zeros_like" if name == "empty_like" else name
    check(
        lambda a: getattr(jnp, name)(a, dtype=dtype, shape=shape),
        lambda a: getattr(np, npname)(a, dtype=dtype, shape=shape),
        x,
    )


def test_like_weak_types_follow_the_prototype():
    assert jnp.zeros_like(jnp.array(2.0)).weak_type
    assert jnp.ones_like(3.0).weak_type and jnp.ones_like(3.0).dtype == F32
    assert not jnp.zeros_like(jnp.array(2.0), dtype=jnp.float32).weak_type
    assert not jnp.full_like(jnp.arange(3.0), 7).weak_type
    got = jnp.full_like(jnp.arange(3), 2.7)
    assert_matches(got, np.full_like(np.arange(3), 2.7), dtype=I32)
    got = jnp.full_like(jnp.zeros((2, 2)), jnp.array([1.0, 2.0]))
    assert_matches(got, np.array([[1.0, 2.0], [1.0, 2.0]]), dtype=F32)


def test_fill_bad_shapes():
    with pytest.raises(ValueError, match="negative"):
        jnp.zeros((2, -1))
    with pytest.raises(TypeError, match="zeros"):
        jnp.zeros((2.0, 3))
    with pytest.raises(TypeError, match="ones"):
        morphax.make_jaxpr(lambda n: jnp.ones(n))(3)
    with pytest.raises(TypeError):
        jnp.zeros(3, dtype="not-a-dtype")
    with pytest.raises(TypeError, match="full"):
        jnp.full((2,), [1.0, 2.0])


# ------------------------------------------------------------------------------ eye / identity


@pytest.mark.parametrize(
    "N,M,k", [(3, None, 0), (3, 4, 1), (4, 3, -1), (2, 5, 7), (3, 3, -5), (0, 2, 0), (1, None, 0)]
)
@pytest.mark.parametrize("dtype", [None, jnp.int32, bool])
def test_eye(N, M, k, dtype):  # noqa: N803
    check(lambda: jnp.eye(N, M, k, dtype=dtype), lambda: np.eye(N, M, k, dtype=dtype or np.float32))


def test_eye_traced_k_and_identity():
    f = lambda k: jnp.eye(3, 4, k)
    for k in (-1, 0, 2):
        assert_matches(staged(f, jnp.int32(k)), np.eye(3, 4, k, dtype=np.float32))
    check(lambda: jnp.identity(4, dtype=jnp.int8), lambda: np.identity(4, dtype=np.int8))
    with pytest.raises(ValueError, match="negative"):
        jnp.eye(-1)
    with pytest.raises(ConcretizationTypeError, match="'N' argument of jnp.eye"):
        morphax.make_jaxpr(lambda n: jnp.eye(n))(3)


# ------------------------------------------------------------------------------------- arange


@pytest.mark.parametrize(
    "args,dtype",
    [
        ((5,), None),
        ((0,), None),
        ((-3,), None),
        ((2.5,), None),
        ((2, 9), None),
        ((0, 7), None),
        ((9, 2, -2), None),
        ((1, 10, 3), None),
        ((0.5, 3.0), None),
        ((0.0, 1.0, 0.1), None),
        ((0, 5, 0.5), None),
        ((5,), jnp.float32),
        ((1, 4), jnp.int8),
        ((np.float32(1), 4), None),
    ],
)
def test_arange(args, dtype):
    want = np.arange(*args, dtype=dtype)
    check(lambda: jnp.arange(*args, dtype=dtype), lambda: want)


def test_arange_dtype_follows_numpy_scalar_arguments():
    # JAX promotes the arguments (NumPy would widen to int64): an int16 bound gives int16.
    check(lambda: jnp.arange(np.int16(7)), lambda: np.arange(7, dtype=np.int16), dtype=np.int16)
    check(lambda: jnp.arange(np.uint8(2), 9), lambda: np.arange(2, 9, dtype=np.uint8), dtype=np.uint8)


def test_arange_concrete_array_args_and_iota_trace():
    assert_matches(jnp.arange(jnp.int32(4)), np.arange(4), dtype=I32)
    closed = morphax.make_jaxpr(lambda: jnp.arange(6))()
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["iota"]


@pytest.mark.parametrize(
    "argname,fn",
    [
        ("stop", lambda n: jnp.arange(n)),
        ("start", lambda n: jnp.arange(n, 10)),
        ("stop", lambda n: jnp.arange(0, n)),
        ("step", lambda n: jnp.arange(0, 10, n)),
    ],
)
def test_arange_traced_argument_errors(argname, fn):
    with pytest.raises(ConcretizationTypeError, match=f"jnp.arange argument '{argname}'"):
        morphax.make_jaxpr(fn)(3)


def test_arange_bad_inputs():
    with pytest.raises(ValueError, match="scalars"):
        jnp.arange(np.arange(3))
    with pytest.raises(ValueError, match="zero"):
        jnp.arange(0, 4, 0)


# ----------------------------------------------------------------------------------- linspace


@pytest.mark.parametrize("num", [0, 1, 2, 5, 50])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("start,stop", [(0, 1), (-2.5, 7.0), (3, -3)])
def test_linspace(num, endpoint, start, stop):
    check(
        lambda: jnp.linspace(start, stop, num, endpoint=endpoint),
        lambda: np.linspace(start, stop, num, endpoint=endpoint),
        dtype=F32,
        rtol=1e-5,
        atol=1e-5,
    )
    got, step = jnp.linspace(start, stop, num, endpoint=endpoint, retstep=True)
    _, want_step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True)
    np.testing.assert_allclose(float(step), want_step, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_linspace_arrays_and_axis(axis):
    start = np.array([0.0, 1.0, -1.0], np.float32)
    stop = np.array([[1.0, 2.0, 5.0], [3.0, 4.0, 6.0]], np.float32)
    check(
        lambda a, b: jnp.linspace(a, b, 4, axis=axis),
        lambda a, b: np.linspace(a, b, 4, axis=axis),
        start,
        stop,
        rtol=1e-5,
        atol=1e-6,
    )


def test_linspace_dtypes_and_tracing():
    check(lambda: jnp.linspace(0, 10, 7, dtype=jnp.int32), lambda: np.linspace(0, 10, 7, dtype=np.int32))
    check(lambda: jnp.linspace(0, 1, 5, dtype=jnp.float16), lambda: np.linspace(0, 1, 5, dtype=np.float16))
    check(
        lambda a, b: jnp.linspace(a, b, 6),
        lambda a, b: np.linspace(a, b, 6),
        np.float32(1.0) * np.ones((), np.float32),
        np.full((), 4.0, np.float32),
        rtol=1e-6,
    )
    with pytest.raises(ValueError, match="non-negative"):
        jnp.linspace(0, 1, -1)
    with pytest.raises(ConcretizationTypeError, match="'num' argument"):
        morphax.make_jaxpr(lambda n: jnp.linspace(0, 1, n))(3)


@pytest.mark.parametrize("endpoint", [True, False])
def test_logspace_geomspace(endpoint):
    check(
        lambda: jnp.logspace(0, 3, 7, endpoint=endpoint),
        lambda: np.logspace(0, 3, 7, endpoint=endpoint),
        rtol=1e-5,
    )
    check(
        lambda: jnp.logspace(1, 2, 5, base=2.0, endpoint=endpoint),
        lambda: np.logspace(1, 2, 5, base=2.0, endpoint=endpoint),
        rtol=1e-5,
    )
    check(
        lambda: jnp.geomspace(1, 1000, 4, endpoint=endpoint),
        lambda: np.geomspace(1, 1000, 4, endpoint=endpoint),
        rtol=1e-5,
    )
    check(
        lambda: jnp.geomspace(-2, -32, 5, endpoint=endpoint),
        lambda: np.geomspace(-2, -32, 5, endpoint=endpoint),
        rtol=1e-5,
    )
    start = np.array([1.0, 2.0], np.float32)
    check(
        lambda a: jnp.geomspace(a, 100.0, 3, axis=1),
        lambda a: np.geomspace(a, 100.0, 3, axis=1),
        start,
        rtol=1e-5,
    )


# ----------------------------------------------------------------------------- astype / copy


@pytest.mark.parametrize("src", [np.float32, np.int32, np.bool_, np.complex64, np.float16])
@pytest.mark.parametrize("dst", [np.float32, np.int8, np.bool_, np.uint8, np.float16, np.complex64])
def test_astype(src, dst):
    x = (
        np.array([0, 1, 2, 3], dtype=src)
        if src is not np.complex64
        else np.array([0, 1 + 2j, 2 - 1j, 3j], src)
    )
    check(
        lambda a: jnp.astype(a, dst),
        lambda a: a.real.astype(dst) if np.iscomplexobj(a) and dst is not np.complex64 else a.astype(dst),
        x,
    )
    assert not jnp.astype(jnp.array(2.0), jnp.float32).weak_type


def test_copy():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    check(jnp.copy, np.copy, x)
    check(lambda a: a.copy(), np.copy, x)
    with pytest.raises(TypeError, match="copy"):
        jnp.copy([1, 2])
