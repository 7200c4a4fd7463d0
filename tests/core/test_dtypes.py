"""Tests for morphax._src.core.dtypes: JAX's promotion tables (golden files), canonicalization,
categories and the small helpers the primitives rely on."""

from __future__ import annotations

import json
import pathlib
import warnings

import ml_dtypes
import numpy as np
import pytest

from morphax import dtypes as public_dtypes
from morphax._src.config import config
from morphax._src.core import dtypes, promotion

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
WEAK_SCALARS = {"i*": 1, "f*": 1.0, "c*": 1j}


class Strong:
    """Stand-in for a morphax array: only ``.dtype`` and ``.weak_type`` matter to result_type."""

    def __init__(self, dt, weak_type=False):
        self.dtype = np.dtype(dt)
        self.weak_type = weak_type


@pytest.fixture
def x32():
    old = config.enable_x64
    config.update("jax_enable_x64", False)
    yield
    config.update("jax_enable_x64", old)


@pytest.fixture
def x64_on():
    old = config.enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", old)


def _load(mode):
    table = json.loads((DATA / f"promotion_{mode}.json").read_text())
    return sorted(table["table"].items())


def _operand(name, style):
    if name in WEAK_SCALARS:
        return WEAK_SCALARS[name]
    return Strong(name) if style == "array" else np.dtype(name)


def _check_table(mode):
    failures = []
    for pair, (want_dtype, want_weak) in _load(mode):
        a, b = pair.split(",")
        for style in ("array", "dtype"):
            got = promotion.result_type(_operand(a, style), _operand(b, style), return_weak_type_flag=True)
            if got != (np.dtype(want_dtype), want_weak) or type(got[1]) is not bool:
                failures.append((pair, style, got, (want_dtype, want_weak)))
    assert not failures, failures[:20]
    return len(_load(mode))


def test_golden_promotion_x32(x32):
    assert _check_table("x32") == 18 * 18


def test_golden_promotion_x64(x64_on):
    assert _check_table("x64") == 18 * 18


def test_golden_tables_survive_x64_flips():
    # The caches must be dropped on every flip; alternate modes to catch stale entries.
    old = config.enable_x64
    try:
        for mode in ("x32", "x64", "x32", "x64"):
            config.update("jax_enable_x64", mode == "x64")
            _check_table(mode)
    finally:
        config.update("jax_enable_x64", old)


def test_result_type_single_and_many(x32):
    assert promotion.result_type(2.0, return_weak_type_flag=True) == (dtypes.float32, True)
    assert promotion.result_type(2, return_weak_type_flag=True) == (dtypes.int32, True)
    assert promotion.result_type(True, return_weak_type_flag=True) == (dtypes.bool_, False)
    assert promotion.result_type(np.float64) == dtypes.float32
    assert promotion.result_type(np.ones(3, np.int8), 1, 2.5, return_weak_type_flag=True) == (
        dtypes.float32,
        True,
    )
    assert promotion.result_type(np.int8, np.uint8, np.float16) == dtypes.float16
    assert promotion.result_type(None) == dtypes.float32
    assert promotion.result_type(int, np.int8) == dtypes.int8  # the Python type is a weak kind too
    with pytest.raises(ValueError):
        promotion.result_type()


def test_result_type_x64_defaults(x64_on):
    assert promotion.result_type(2.0, return_weak_type_flag=True) == (dtypes.float64, True)
    assert promotion.result_type(1, 1j, return_weak_type_flag=True) == (dtypes.complex128, True)
    assert promotion.result_type(np.ones(2, np.float64), np.float32) == dtypes.float64


def test_weak_arrays_promote_as_python_scalars(x32):
    weak_f32 = Strong("float32", weak_type=True)
    assert promotion.result_type(weak_f32, Strong("float16"), return_weak_type_flag=True) == (
        dtypes.float16,
        False,
    )
    assert promotion.result_type(weak_f32, Strong("int8"), return_weak_type_flag=True) == (
        dtypes.float32,
        True,
    )
    assert promotion.result_type(weak_f32, 3, return_weak_type_flag=True) == (dtypes.float32, True)
    weak_i32 = Strong("int32", weak_type=True)
    assert promotion.result_type(weak_i32, Strong("uint8"), return_weak_type_flag=True) == (
        dtypes.uint8,
        False,
    )
    assert promotion.result_type(weak_i32, weak_f32, return_weak_type_flag=True) == (dtypes.float32, True)
    assert promotion.result_type(weak_f32, weak_f32, return_weak_type_flag=True) == (dtypes.float32, True)
    assert promotion.result_type(Strong("bfloat16", True), return_weak_type_flag=True) == (
        dtypes.float32,
        True,
    )


def test_narrow_types_do_not_promote(x32):
    f8 = dtypes.float8_e4m3fn
    assert promotion.result_type(f8, f8) == f8
    assert promotion.result_type(f8, 1.0) == f8
    assert promotion.result_type(f8, np.int32) == f8
    assert promotion.result_type(dtypes.int4, 3) == dtypes.int4
    with pytest.raises(dtypes.TypePromotionError, match="no available implicit dtype promotion"):
        promotion.result_type(f8, np.float32)
    with pytest.raises(dtypes.TypePromotionError):
        promotion.result_type(dtypes.int4, np.int8)
    with pytest.raises(ValueError):  # TypePromotionError is a ValueError, as in JAX
        promotion.result_type(dtypes.float8_e5m2, f8)


def test_result_type_rejects_non_numeric():
    with pytest.raises(TypeError, match="not a valid JAX array type"):
        promotion.result_type(np.array(["a"]), np.float32)
    with pytest.raises(TypeError, match="not a valid JAX array type"):
        dtypes.dtype(np.array([object()]))
    with pytest.raises(TypeError):
        promotion.result_type(object())


def test_float0_only_promotes_with_itself():
    assert promotion.result_type(dtypes.float0, dtypes.float0) == dtypes.float0
    with pytest.raises(dtypes.TypePromotionError):
        promotion.result_type(dtypes.float0, np.float32)


def test_result_type_cache_is_sound(x32):
    # A fresh non-native-order dtype must not hit an entry cached for the native one.
    assert promotion.result_type(np.float32, np.float32) == dtypes.float32
    with pytest.raises(TypeError):
        promotion.result_type(np.dtype(">f4"), np.float32)
    big = np.zeros(2, dtype=">i4")
    with pytest.raises(TypeError):
        promotion.result_type(big, big)


def test_promote_types_is_the_raw_lattice():
    assert promotion.promote_types(np.int8, np.uint8) == dtypes.int16
    assert promotion.promote_types(np.int64, np.uint64) == dtypes.float64  # no canonicalization
    assert promotion.promote_types(dtypes.bfloat16, np.float16) == dtypes.float32
    assert promotion.promote_types(int, np.uint8) == dtypes.uint8
    assert promotion.promote_types(float, int) == dtypes.float64
    assert promotion.promote_types("bfloat16", "int32") == dtypes.bfloat16
    assert promotion.promote_types(np.bool_, np.bool_) == dtypes.bool_


def test_canonicalize_dtype(x32):
    cd = dtypes.canonicalize_dtype
    assert cd(np.int64) == dtypes.int32
    assert cd(np.uint64) == dtypes.uint32
    assert cd("float64") == dtypes.float32
    assert cd(np.complex128) == dtypes.complex64
    assert cd(int) == dtypes.int32
    assert cd(float) == dtypes.float32
    assert cd(complex) == dtypes.complex64
    assert cd(bool) == dtypes.bool_
    assert cd("bfloat16") == dtypes.bfloat16
    assert cd(ml_dtypes.bfloat16) == dtypes.bfloat16
    assert cd(np.int16) == dtypes.int16
    assert cd(dtypes.float8_e5m2) == dtypes.float8_e5m2
    assert isinstance(cd(np.float32), np.dtype)


def test_canonicalize_dtype_x64(x64_on):
    assert dtypes.canonicalize_dtype(np.int64) == dtypes.int64
    assert dtypes.canonicalize_dtype(float) == dtypes.float64
    assert dtypes.default_int_dtype() == dtypes.int64
    assert dtypes.default_uint_dtype() == dtypes.uint64
    assert dtypes.default_float_dtype() == dtypes.float64
    assert dtypes.default_complex_dtype() == dtypes.complex128


def test_defaults_x32(x32):
    assert dtypes.default_int_dtype() == dtypes.int32
    assert dtypes.default_uint_dtype() == dtypes.uint32
    assert dtypes.default_float_dtype() == dtypes.float32
    assert dtypes.default_complex_dtype() == dtypes.complex64


def test_unknown_dtype_errors():
    with pytest.raises(TypeError, match="not_a_dtype"):
        dtypes.canonicalize_dtype("not_a_dtype")
    with pytest.raises(TypeError, match="bf16"):
        dtypes.canonicalize_dtype("bf16")
    with pytest.raises(TypeError):
        dtypes.issubdtype("nope", np.floating)


def test_scalars_and_weak_types(x32):
    assert dtypes.is_python_scalar(1) and dtypes.is_python_scalar(1.0) and dtypes.is_python_scalar(True)
    assert not dtypes.is_python_scalar(np.float64(1.0))  # a float subclass, but not a Python scalar
    assert not dtypes.is_python_scalar(np.ones(()))
    assert dtypes.python_scalar_dtype(1) == dtypes.int32
    assert dtypes.python_scalar_dtype(1.0) == dtypes.float32
    assert dtypes.python_scalar_dtype(1j) == dtypes.complex64
    assert dtypes.python_scalar_dtype(True) == dtypes.bool_
    assert dtypes.is_weakly_typed(1) and dtypes.is_weakly_typed(2.0) and dtypes.is_weakly_typed(1j)
    assert not dtypes.is_weakly_typed(True)  # JAX keeps Python bools strong
    assert not dtypes.is_weakly_typed(np.float64(1.0))
    assert dtypes.is_weakly_typed(Strong("float32", weak_type=True))
    assert not dtypes.is_weakly_typed(Strong("float32"))
    assert not dtypes.is_weakly_typed(np.ones(3))


def test_dtype_function(x32):
    assert dtypes.dtype(1) == dtypes.int64
    assert dtypes.dtype(1, canonicalize=True) == dtypes.int32
    assert dtypes.dtype(1.0) == dtypes.float64
    assert dtypes.dtype(np.float16(1)) == dtypes.float16
    assert dtypes.dtype(np.ones(2, np.uint8)) == dtypes.uint8
    assert dtypes.dtype("bfloat16") == dtypes.bfloat16
    assert dtypes.dtype(np.float32) == dtypes.float32
    assert dtypes.dtype(float) == dtypes.float64
    assert dtypes.dtype(Strong("int16")) == dtypes.int16
    assert dtypes.dtype(np.ones(2), canonicalize=True) == dtypes.float32
    with pytest.raises(ValueError):
        dtypes.dtype(None)


def test_scalar_type_of():
    assert dtypes.scalar_type_of(np.ones(2, np.int8)) is int
    assert dtypes.scalar_type_of(np.uint32(3)) is int
    assert dtypes.scalar_type_of(True) is bool
    assert dtypes.scalar_type_of(np.ones(2, dtypes.bfloat16)) is float
    assert dtypes.scalar_type_of(np.ones(2, dtypes.int4)) is int
    assert dtypes.scalar_type_of(1j) is complex
    assert dtypes.scalar_type_of(Strong("float32")) is float


@pytest.mark.parametrize(
    "dt, cat, want",
    [
        (dtypes.bfloat16, np.floating, True),
        (dtypes.bfloat16, np.inexact, True),
        (dtypes.bfloat16, np.number, True),
        (dtypes.bfloat16, np.generic, True),
        (dtypes.bfloat16, np.integer, False),
        (dtypes.bfloat16, np.complexfloating, False),
        (dtypes.bfloat16, dtypes.bfloat16, True),
        (dtypes.bfloat16, ml_dtypes.bfloat16, True),
        (ml_dtypes.bfloat16, np.floating, True),
        ("bfloat16", np.inexact, True),
        (dtypes.bfloat16, np.float16, False),
        (dtypes.float8_e4m3fn, np.floating, True),
        (dtypes.float8_e4m3fn, dtypes.float8_e5m2, False),
        (dtypes.int4, np.signedinteger, True),
        (dtypes.int4, np.integer, True),
        (dtypes.int4, np.unsignedinteger, False),
        (dtypes.int4, np.floating, False),
        (dtypes.uint4, np.unsignedinteger, True),
        (dtypes.uint4, np.integer, True),
        (np.float32, np.floating, True),
        (np.float32, dtypes.bfloat16, False),
        (np.float32, float, False),  # float means float64, as in numpy
        (np.float64, float, True),
        (np.int32, np.integer, True),
        (np.int32, np.unsignedinteger, False),
        (np.uint8, np.unsignedinteger, True),
        (np.complex64, np.complexfloating, True),
        (np.complex64, np.inexact, True),
        (np.bool_, np.bool_, True),
        (np.bool_, np.number, False),
        (np.bool_, np.generic, True),
        ("int8", np.signedinteger, True),
        (int, np.integer, True),
        (dtypes.float0, np.generic, True),
        (np.float32, dtypes.extended, False),
    ],
)
def test_issubdtype(dt, cat, want):
    assert dtypes.issubdtype(dt, cat) is want


def test_category_helpers():
    assert dtypes.is_floating(dtypes.bfloat16) and dtypes.is_floating(np.float64)
    assert dtypes.is_floating(dtypes.float8_e4m3fn) and not dtypes.is_floating(np.complex64)
    assert (
        dtypes.is_inexact(np.complex64) and dtypes.is_inexact("bfloat16") and not dtypes.is_inexact(np.int8)
    )
    assert dtypes.is_complex(np.complex128) and not dtypes.is_complex(np.float32)
    assert dtypes.is_integer(np.uint8) and dtypes.is_integer(dtypes.int4) and not dtypes.is_integer(np.bool_)
    assert (
        dtypes.is_unsigned(np.uint16) and dtypes.is_unsigned(dtypes.uint4) and not dtypes.is_unsigned(np.int8)
    )
    assert dtypes.is_bool(np.bool_) and not dtypes.is_bool(np.int8)


def test_dtype_conversions(x32):
    assert dtypes.to_inexact_dtype(np.int32) == dtypes.float32
    assert dtypes.to_inexact_dtype(np.bool_) == dtypes.float32
    assert dtypes.to_inexact_dtype(dtypes.bfloat16) == dtypes.bfloat16
    assert dtypes.to_inexact_dtype(np.complex64) == dtypes.complex64
    assert dtypes.to_complex_dtype(np.float32) == dtypes.complex64
    assert dtypes.to_complex_dtype(np.float64) == dtypes.complex128
    assert dtypes.to_complex_dtype(dtypes.bfloat16) == dtypes.complex64
    assert dtypes.to_complex_dtype(np.float16) == dtypes.complex64
    assert dtypes.to_complex_dtype(np.int8) == dtypes.complex64
    assert dtypes.to_complex_dtype(np.complex128) == dtypes.complex128
    assert dtypes.real_dtype(np.complex64) == dtypes.float32
    assert dtypes.real_dtype(np.complex128) == dtypes.float64
    assert dtypes.real_dtype(np.float16) == dtypes.float16


def test_to_inexact_x64(x64_on):
    # JAX 0.10.2: only 64-bit integers widen to float64; int32 and narrower become float32 even
    # in x64 mode (so jnp.mean/jnp.sqrt of int32 is float32 there).
    assert dtypes.to_inexact_dtype(np.int64) == dtypes.float64
    assert dtypes.to_inexact_dtype(np.int32) == dtypes.float32
    assert dtypes.to_complex_dtype(np.int32) == dtypes.complex64
    assert dtypes.to_complex_dtype(np.int64) == dtypes.complex128


@pytest.mark.parametrize(
    "dt, name",
    [
        (np.bool_, "bool"),
        (np.int8, "i8"),
        (np.int16, "i16"),
        (np.int32, "i32"),
        (np.int64, "i64"),
        (np.uint8, "u8"),
        (np.uint16, "u16"),
        (np.uint32, "u32"),
        (np.uint64, "u64"),
        (dtypes.bfloat16, "bf16"),
        (np.float16, "f16"),
        (np.float32, "f32"),
        (np.float64, "f64"),
        (np.complex64, "c64"),
        (np.complex128, "c128"),
        (dtypes.float0, "float0"),
        (dtypes.float8_e4m3fn, "f8_e4m3fn"),
        (dtypes.float8_e5m2, "f8_e5m2"),
        (dtypes.int4, "i4"),
        (dtypes.uint4, "u4"),
    ],
)
def test_short_dtype_name(dt, name):
    assert dtypes.short_dtype_name(np.dtype(dt)) == name
    assert dtypes.short_dtype_name(np.dtype(dt)) == name  # second call is served from the cache


def test_finfo_iinfo(x32):
    assert dtypes.finfo(dtypes.bfloat16).eps == 2.0**-7
    assert dtypes.finfo(dtypes.bfloat16).bits == 16
    assert dtypes.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert dtypes.finfo(np.float64).eps == np.finfo(np.float32).eps  # canonicalized under x32
    assert dtypes.finfo(np.complex64).eps == np.finfo(np.float32).eps
    assert float(dtypes.finfo(dtypes.float8_e4m3fn).max) == 448.0
    assert dtypes.finfo(np.ones(2, np.float16)).bits == 16
    assert dtypes.iinfo(np.int8).max == 127
    assert dtypes.iinfo(np.uint16).max == 65535
    assert dtypes.iinfo(np.int64).max == np.iinfo(np.int32).max  # canonicalized under x32
    assert dtypes.iinfo(dtypes.int4).min == -8
    assert dtypes.iinfo(dtypes.uint4).max == 15
    with pytest.raises(ValueError):
        dtypes.finfo(np.int32)


def test_finfo_x64(x64_on):
    assert dtypes.finfo(np.float64).eps == np.finfo(np.float64).eps
    assert dtypes.iinfo(np.int64).max == np.iinfo(np.int64).max


def test_can_cast():
    assert dtypes.can_cast(np.int8, np.int16)
    assert not dtypes.can_cast(np.int16, np.int8)
    assert dtypes.can_cast(np.int16, np.int8, casting="unsafe")
    assert dtypes.can_cast(dtypes.bfloat16, np.float32)
    assert not dtypes.can_cast(np.float32, dtypes.bfloat16)
    assert dtypes.can_cast(np.float32, "bfloat16", casting="same_kind")
    assert dtypes.can_cast(np.ones(2, np.float32), np.float64)
    assert dtypes.can_cast(Strong("uint8"), np.int16)
    assert dtypes.can_cast("int32", "int64")
    assert dtypes.can_cast(int, float)


def test_itemsize_bits():
    assert dtypes.itemsize_bits(np.float32) == 32
    assert dtypes.itemsize_bits(dtypes.int4) == 4
    assert dtypes.itemsize_bits(dtypes.bfloat16) == 16
    assert dtypes.itemsize_bits(np.bool_) == 8


def test_check_user_dtype_supported(x32):
    with pytest.warns(UserWarning, match="float64 in zeros is not available"):
        dtypes.check_user_dtype_supported(np.float64, "zeros")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dtypes.check_user_dtype_supported(np.float32, "zeros")
        dtypes.check_user_dtype_supported(float, "zeros")  # Python types request the default
        dtypes.check_user_dtype_supported(None)
    with pytest.raises(TypeError, match="only supports number and bool"):
        dtypes.check_user_dtype_supported(np.str_)


def test_dtype_constants():
    for name in ("bool_", "int8", "uint64", "bfloat16", "float16", "complex128", "float8_e4m3fn", "int4"):
        assert isinstance(getattr(dtypes, name), np.dtype)
    assert dtypes.bfloat16 == np.dtype(ml_dtypes.bfloat16)
    assert dtypes.float0.itemsize == 0
    assert dtypes.float0 == np.dtype([("float0", np.void, 0)])


def test_public_module_reexports():
    for name in public_dtypes.__all__:
        if name == "prng_key":  # the key dtypes' category lives with the keys (random/keys.py)
            from morphax._src.random.keys import prng_key

            assert public_dtypes.prng_key is prng_key
            continue
        if name in dtypes.ML_DTYPE_NAMES:  # the scalar types (as jax.dtypes.bfloat16 is ml_dtypes')
            assert getattr(public_dtypes, name) is np.dtype(getattr(dtypes, name)).type
            continue
        assert getattr(public_dtypes, name) is getattr(
            promotion if name in promotion.__all__ else dtypes, name
        )
    assert public_dtypes.bfloat16 is np.dtype(dtypes.bfloat16).type


def test_config_listener_resets_defaults():
    old = config.enable_x64
    try:
        config.update("jax_enable_x64", True)
        assert promotion.result_type(1.0) == dtypes.float64
        assert dtypes.canonicalize_dtype(np.int64) == dtypes.int64
        config.update("jax_enable_x64", False)
        assert promotion.result_type(1.0) == dtypes.float32
        assert dtypes.canonicalize_dtype(np.int64) == dtypes.int32
    finally:
        config.update("jax_enable_x64", old)
