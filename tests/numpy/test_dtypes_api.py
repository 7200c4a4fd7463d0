"""The dtype surface of morphax.numpy: scalar types (`jnp.float32(3)`, usable as dtypes),
abstract categories, dtype helpers and constants, as JAX exposes them."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import morphax
import morphax.numpy as jnp


@pytest.mark.parametrize(
    "name,np_type",
    [
        ("bool_", np.bool_),
        ("int8", np.int8),
        ("int16", np.int16),
        ("int32", np.int32),
        ("uint8", np.uint8),
        ("uint16", np.uint16),
        ("uint32", np.uint32),
        ("float16", np.float16),
        ("float32", np.float32),
        ("bfloat16", ml_dtypes.bfloat16),
        ("complex64", np.complex64),
        ("single", np.float32),
        ("half", np.float16),
        ("csingle", np.complex64),
        ("bool", np.bool_),
    ],
)
def test_scalar_type_call_and_dtype(name, np_type):
    st = getattr(jnp, name)
    out = st(3)
    assert isinstance(out, morphax.Array)
    assert out.dtype == np.dtype(np_type) and out.shape == () and not out.weak_type
    assert np.dtype(st) == np.dtype(np_type)
    assert jnp.dtype(st) == np.dtype(np_type)
    assert st == np_type and np_type == st and hash(st) == hash(np_type)
    assert st.dtype == np.dtype(np_type)
    z = jnp.zeros(2, dtype=st)
    assert z.dtype == np.dtype(np_type)
    assert np.zeros(2, dtype=st).dtype == np.dtype(np_type)
    assert jnp.asarray([1, 0], dtype=st).dtype == np.dtype(np_type)


def test_scalar_type_converts_arrays_and_tracers():
    x = jnp.arange(3)
    out = jnp.float32(x)
    assert out.dtype == np.float32 and out.shape == (3,)
    np.testing.assert_array_equal(np.asarray(jnp.int8(jnp.array([1.7, -2.2]))), [1, -2])
    closed = morphax.make_jaxpr(lambda v: jnp.float16(v))(x)
    assert closed.out_avals[0].dtype == np.float16
    assert repr(jnp.float32(3)) == "Array(3., dtype=float32)"


@pytest.mark.parametrize(
    "name,canon",
    [
        ("int64", np.int32),
        ("float64", np.float32),
        ("uint64", np.uint32),
        ("complex128", np.complex64),
        ("float_", np.float32),
        ("int_", np.int32),
        ("double", np.float32),
        ("uint", np.uint32),
    ],
)
def test_64bit_scalar_types_canonicalize_in_x32(name, canon):
    st = getattr(jnp, name)
    with pytest.warns(UserWarning, match="not available"):
        out = st(1)
    assert out.dtype == canon
    with morphax.config._override("jax_enable_x64", True):
        assert st(1).dtype == np.dtype(st)


def test_abstract_categories_and_issubdtype():
    assert jnp.floating is np.floating and jnp.integer is np.integer and jnp.number is np.number
    assert jnp.issubdtype(jnp.float32, jnp.floating)
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and jnp.issubdtype(jnp.bfloat16, jnp.inexact)
    assert jnp.issubdtype(jnp.int8, jnp.signedinteger) and not jnp.issubdtype(jnp.uint8, jnp.signedinteger)
    assert jnp.issubdtype(jnp.uint16, jnp.unsignedinteger) and jnp.issubdtype(
        jnp.complex64, jnp.complexfloating
    )
    assert jnp.issubdtype(np.dtype("int32"), jnp.number) and not jnp.issubdtype(jnp.bool_, jnp.number)
    assert isinstance(np.float32(1), jnp.float32) and not isinstance(np.float16(1), jnp.float32)


def test_dtype_helpers():
    assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.finfo(jnp.bfloat16).bits == 16
    assert jnp.iinfo(jnp.int8).max == 127 and jnp.iinfo(np.uint16).max == 65535
    assert jnp.result_type(jnp.int8, jnp.float16) == np.float16
    assert jnp.result_type(jnp.ones(2, jnp.int8), 2.0) == np.float32
    assert jnp.result_type(jnp.ones(2, jnp.float16), 2.0) == np.float16
    assert jnp.result_type(jnp.int64, jnp.int8) == np.int32  # canonicalized in x32
    assert jnp.promote_types(jnp.uint8, jnp.int8) == np.int16
    assert jnp.promote_types(jnp.bfloat16, jnp.float16) == np.float32
    assert jnp.can_cast(jnp.int8, jnp.int32) and not jnp.can_cast(jnp.float32, jnp.int32)
    assert jnp.dtype("float32") == np.float32 and jnp.dtype is np.dtype


def test_constants_and_ndarray():
    assert jnp.pi == np.pi and jnp.e == np.e and jnp.inf == np.inf and np.isnan(jnp.nan)
    assert jnp.euler_gamma == np.euler_gamma and jnp.newaxis is None
    assert jnp.ndarray is morphax.Array
    assert isinstance(jnp.zeros(2), jnp.ndarray)
    x = jnp.arange(6).reshape(2, 3)
    assert x[:, jnp.newaxis].shape == (2, 1, 3)


def test_public_namespace_exports():
    for name in (
        "sum",
        "array",
        "zeros",
        "reshape",
        "einsum",
        "matmul",
        "logsumexp",
        "take",
        "sin",
        "where",
        "float32",
        "concatenate",
        "split",
        "round",
        "isclose",
        "linspace",
        "argmax",
        "cumsum",
    ):
        assert callable(getattr(jnp, name)), name
