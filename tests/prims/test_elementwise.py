"""Independent checks of the elementwise primitives: known answers from Python integers, bin(),
math/SciPy routes and hand-written tables (the generated matrix only compares against each
primitive's own NumPy reference), plus the error messages for bad inputs."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

import morphax
from morphax import lax

INT_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def _np(x):
    return np.asarray(x)


def _int_values(dt):
    info = np.iinfo(dt)
    vals = {0, 1, 2, 3, 7, 100, int(info.max), int(info.max) - 1, int(info.min), int(info.min) + 1}
    if info.min < 0:
        vals |= {-1, -2, -3, -7, -100}
    return sorted(v for v in vals if info.min <= v <= info.max)


def _pairs(dt):
    vals = _int_values(dt)
    xs, ys = zip(*itertools.product(vals, vals))
    return np.array(xs, dt), np.array(ys, dt)


def _wrap(v, dt):
    """A Python int reduced to dtype `dt`'s two's complement range."""
    info = np.iinfo(dt)
    bits = np.dtype(dt).itemsize * 8
    v &= (1 << bits) - 1
    if info.min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


# ---------------------------------------------------------------------------------------------
# Integer division and remainder: truncation toward zero, XLA's answers for the trapping cases.


def _trunc_div(a, b, dt):
    info = np.iinfo(dt)
    if b == 0:
        return -1 if info.min < 0 else int(info.max)
    if a == info.min and b == -1:
        return int(info.min)
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _trunc_rem(a, b, dt):
    info = np.iinfo(dt)
    if b == 0:
        return a
    if a == info.min and b == -1:
        return 0
    return a - b * _trunc_div(a, b, dt)


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_integer_div_rem_table(dt):
    x, y = _pairs(dt)
    q, r = _np(lax.div(x, y)), _np(lax.rem(x, y))
    assert q.dtype == r.dtype == np.dtype(dt)
    for a, b, gq, gr in zip(x.tolist(), y.tolist(), q.tolist(), r.tolist()):
        assert gq == _trunc_div(a, b, dt), (a, b)
        assert gr == _trunc_rem(a, b, dt), (a, b)


def test_integer_div_rem_scalars_and_broadcasting():
    assert int(lax.div(np.int32(-7), np.int32(2))) == -3
    assert int(lax.rem(np.int32(-7), np.int32(2))) == -1
    assert int(lax.div(np.int32(5), np.int32(0))) == -1
    assert int(lax.div(np.uint8(5), np.uint8(0))) == 255
    got = _np(lax.div(np.array([[-9], [9]], np.int32), np.array([[2, -4, 0]], np.int32)))
    np.testing.assert_array_equal(got, [[-4, 2, -1], [4, -2, -1]])


def test_float_rem_takes_dividend_sign():
    x = np.array([5.5, -5.5, 5.5, -5.5, 1.0, 3.0], np.float32)
    y = np.array([2.0, 2.0, -2.0, -2.0, 0.0, np.inf], np.float32)
    got = _np(lax.rem(x, y))
    np.testing.assert_array_equal(got[:4], [1.5, -1.5, 1.5, -1.5])
    assert np.isnan(got[4]) and got[5] == 3.0


def test_integer_arithmetic_wraps_without_warnings():
    a = np.int8(100)
    assert int(lax.add(a, a)) == _wrap(200, "int8")
    assert int(lax.mul(a, a)) == _wrap(10000, "int8")
    assert int(lax.sub(np.uint8(0), np.uint8(1))) == 255
    assert int(lax.neg(np.int32(-(2**31)))) == -(2**31)
    assert int(lax.abs(np.int8(-128))) == -128
    assert int(lax.neg(np.uint8(3))) == 253


# ---------------------------------------------------------------------------------------------
# Shifts against Python big ints masked to the width.


def _shift_expect(kind, a, s, dt):
    bits = np.dtype(dt).itemsize * 8
    signed_a = _wrap(a, f"int{bits}")  # the bit pattern read as signed
    if not 0 <= s < bits:  # XLA reads the amount as unsigned: negatives are huge
        if kind == "arithmetic":
            return _wrap(-1 if signed_a < 0 else 0, dt)
        return 0
    if kind == "left":
        return _wrap(a << s, dt)
    if kind == "logical":
        return _wrap((a & ((1 << bits) - 1)) >> s, dt)
    return _wrap(signed_a >> s, dt)


@pytest.mark.parametrize("dt", INT_DTYPES)
@pytest.mark.parametrize(
    "kind,fn",
    [
        ("left", lax.shift_left),
        ("logical", lax.shift_right_logical),
        ("arithmetic", lax.shift_right_arithmetic),
    ],
)
def test_shifts_match_python(dt, kind, fn):
    bits = np.dtype(dt).itemsize * 8
    info = np.iinfo(dt)
    amounts = [s for s in (-3, -1, 0, 1, 2, bits - 1, bits, bits + 1, 40, 100) if info.min <= s <= info.max]
    vals = _int_values(dt)
    xs, ss = zip(*itertools.product(vals, amounts))
    got = _np(fn(np.array(xs, dt), np.array(ss, dt)))
    assert got.dtype == np.dtype(dt)
    for a, s, g in zip(xs, ss, got.tolist()):
        assert g == _shift_expect(kind, a, s, dt), (a, s)


def test_shift_known_answers():
    assert int(lax.shift_left(np.int32(1), np.int32(32))) == 0
    assert int(lax.shift_right_logical(np.int32(-1), np.int32(28))) == 15
    assert int(lax.shift_right_arithmetic(np.int32(-8), np.int32(1))) == -4
    assert int(lax.shift_right_arithmetic(np.int32(-8), np.int32(33))) == -1
    assert int(lax.shift_right_arithmetic(np.int32(8), np.int32(-1))) == 0
    assert int(lax.shift_right_logical(np.int8(-128), np.int8(7))) == 1


# ---------------------------------------------------------------------------------------------
# Rounding.


ROUND_X = [-2.5, -1.5, -0.5, -0.49999997, 0.0, 0.49999997, 0.5, 1.5, 2.5, 3.5, -3.7, 8388609.0]


def test_round_half_away_from_zero():
    x = np.array(ROUND_X, np.float32)
    want = [-3, -2, -1, -0, 0, 0, 1, 2, 3, 4, -4, 8388609]
    np.testing.assert_array_equal(_np(lax.round(x)), np.array(want, np.float32))
    got = _np(lax.round(x, rounding_method=lax.RoundingMethod.AWAY_FROM_ZERO))
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    # Like C round(), small negatives round to a negative zero.
    assert np.signbit(_np(lax.round(np.float32(-0.4))))


def test_round_half_to_even():
    x = np.array(ROUND_X, np.float32)
    want = [-2, -2, -0, -0, 0, 0, 0, 2, 2, 4, -4, 8388609]
    got = _np(lax.round(x, rounding_method=lax.RoundingMethod.TO_NEAREST_EVEN))
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    assert int(lax.RoundingMethod.TO_NEAREST_EVEN) == 1


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_round_narrow_floats(dt):
    x = np.array([0.5, 1.5, 2.5, -2.5], dt)
    np.testing.assert_array_equal(_np(lax.round(x)).astype(np.float32), [1, 2, 3, -3])
    got = _np(lax.round(x, 1)).astype(np.float32)
    np.testing.assert_array_equal(got, [0, 2, 2, -2])


def test_floor_ceil_is_finite():
    x = np.array([-1.5, -0.0, 0.2, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(_np(lax.floor(x))[:4], [-2, -0.0, 0, np.inf])
    np.testing.assert_array_equal(_np(lax.ceil(x))[:4], [-1, -0.0, 1, np.inf])
    np.testing.assert_array_equal(_np(lax.is_finite(x)), [True, True, True, False, False])


# ---------------------------------------------------------------------------------------------
# max/min, sign, abs, logistic and the special functions.


def test_max_min_propagate_nan():
    x = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    y = np.array([1.0, np.nan, np.nan, np.nan], np.float32)
    assert np.isnan(_np(lax.max(x, y))).all()
    assert np.isnan(_np(lax.min(x, y))).all()
    np.testing.assert_array_equal(_np(lax.max(np.float32(2), np.float32(-3))), 2)
    np.testing.assert_array_equal(_np(lax.min(np.float32(2), np.float32(-3))), -3)


def test_max_min_signed_zeros():
    pz, nz = np.float32(0.0), np.float32(-0.0)
    for a, b in ((pz, nz), (nz, pz)):
        assert not np.signbit(_np(lax.max(a, b)))
        assert np.signbit(_np(lax.min(a, b)))


def test_max_min_complex_and_bool():
    x = np.array([1 + 5j, 2 + 0j, 1 + 1j], np.complex64)
    y = np.array([1 + 6j, 1 + 9j, 1 + 1j], np.complex64)
    np.testing.assert_array_equal(_np(lax.max(x, y)), [1 + 6j, 2 + 0j, 1 + 1j])
    np.testing.assert_array_equal(_np(lax.min(x, y)), [1 + 5j, 1 + 9j, 1 + 1j])
    b = np.array([True, False, True, False])
    c = np.array([True, True, False, False])
    np.testing.assert_array_equal(_np(lax.max(b, c)), b | c)
    np.testing.assert_array_equal(_np(lax.min(b, c)), b & c)


def test_sign():
    got = _np(lax.sign(np.array([-3.0, -0.0, 0.0, 2.0, np.nan, -np.inf], np.float32)))
    np.testing.assert_array_equal(got[[0, 1, 2, 3, 5]], [-1, 0, 0, 1, -1])
    assert np.signbit(got[1]) and not np.signbit(got[2]) and np.isnan(got[4])
    np.testing.assert_array_equal(_np(lax.sign(np.array([-5, 0, 7], np.int8))), [-1, 0, 1])
    np.testing.assert_array_equal(_np(lax.sign(np.array([0, 200], np.uint8))), [0, 1])
    z = _np(lax.sign(np.array([3 + 4j, 0j], np.complex64)))
    np.testing.assert_allclose(z, [0.6 + 0.8j, 0], rtol=1e-6)


def test_abs_complex_gives_real():
    got = lax.abs(np.array([3 + 4j, -1j], np.complex64))
    assert got.dtype == np.float32
    np.testing.assert_allclose(_np(got), [5.0, 1.0], rtol=1e-7)


def test_logistic_is_finite_at_extremes():
    got = _np(lax.logistic(np.array([-100.0, 0.0, 100.0], np.float32)))
    assert np.isfinite(got).all()
    assert got[1] == 0.5 and got[2] == 1.0 and 0.0 <= got[0] < 1e-40
    want = 1 / (1 + math.exp(-1.5))
    assert abs(float(lax.logistic(np.float32(1.5))) - want) < 1e-7


def test_erf_inv_inverts_erf():
    x = np.linspace(-2.0, 2.0, 41, dtype=np.float32)
    np.testing.assert_allclose(_np(lax.erf_inv(lax.erf(x))), x, rtol=2e-4, atol=2e-4)
    edges = _np(lax.erf_inv(np.array([1.0, -1.0, 1.5], np.float32)))
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[2])


def test_special_functions_vs_math():
    x = [0.3, 1.0, 2.5, 4.0]
    arr = np.array(x, np.float64).astype(np.float32)
    np.testing.assert_allclose(_np(lax.erf(arr)), [math.erf(v) for v in arr.tolist()], rtol=1e-6)
    np.testing.assert_allclose(_np(lax.erfc(arr)), [math.erfc(v) for v in arr.tolist()], rtol=1e-6)
    np.testing.assert_allclose(
        _np(lax.lgamma(arr)), [math.lgamma(v) for v in arr.tolist()], rtol=1e-6, atol=1e-7
    )
    # digamma(1) = -Euler's gamma; digamma(x + 1) = digamma(x) + 1/x.
    assert abs(float(lax.digamma(np.float32(1.0))) + 0.5772156649) < 1e-6
    d = _np(lax.digamma(np.array([2.5, 3.5], np.float32)))
    assert abs(d[1] - d[0] - 1 / 2.5) < 1e-6
    poles = _np(lax.digamma(np.array([0.0, -1.0, -2.0], np.float32)))
    assert np.isnan(poles).all()
    # The 16-bit floats go through float32 and round back.
    got = lax.erf(np.array([0.5], ml_dtypes.bfloat16))
    assert got.dtype == ml_dtypes.bfloat16
    assert float(_np(got)[0]) == float(np.float32(math.erf(0.5)).astype(ml_dtypes.bfloat16))


def test_roots_and_reciprocal():
    np.testing.assert_array_equal(_np(lax.cbrt(np.array([-27.0, 8.0], np.float32))), [-3.0, 2.0])
    np.testing.assert_array_equal(_np(lax.rsqrt(np.array([4.0, 0.25], np.float32))), [0.5, 2.0])
    np.testing.assert_array_equal(_np(lax.reciprocal(np.array([4.0, -0.5], np.float32))), [0.25, -2.0])
    np.testing.assert_array_equal(_np(lax.square(np.array([-3, 16], np.int8))), [9, 0])


def test_nextafter_matches_numpy():
    x = np.array([0.0, 1.0, -1.0, 1.0, np.inf, np.nan, 3.0], np.float32)
    y = np.array([1.0, 2.0, -2.0, 0.0, 0.0, 1.0, 3.0], np.float32)
    np.testing.assert_array_equal(_np(lax.nextafter(x, y)), np.nextafter(x, y))
    assert float(lax.nextafter(np.float32(0), np.float32(1))) == np.float32(1e-45)


def test_exp_log_trig_known_values():
    np.testing.assert_allclose(_np(lax.exp2(np.array([3.0, -1.0], np.float32))), [8.0, 0.5])
    np.testing.assert_allclose(_np(lax.log1p(np.float32(1e-7))), 1e-7, rtol=1e-6)
    np.testing.assert_allclose(_np(lax.expm1(np.float32(1e-7))), 1e-7, rtol=1e-6)
    np.testing.assert_allclose(float(lax.atan2(np.float32(1), np.float32(-1))), 3 * math.pi / 4, rtol=1e-6)
    np.testing.assert_allclose(float(lax.acosh(np.float32(1))), 0.0)
    assert lax.exp(np.float32(1), accuracy=lax.AccuracyMode.HIGHEST).dtype == np.float32


def test_complex_atan2_agrees_on_real_values():
    x = np.array([1.0, -2.0, 0.5], np.float32)
    y = np.array([-1.0, 3.0, -4.0], np.float32)
    got = _np(lax.atan2(x.astype(np.complex64), y.astype(np.complex64)))
    np.testing.assert_allclose(got.real, np.arctan2(x, y), rtol=1e-6)
    np.testing.assert_allclose(got.imag, 0, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Bit counting.


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_population_count_and_clz_vs_bin(dt):
    bits = np.dtype(dt).itemsize * 8
    vals = _int_values(dt) + [5, 0x55 if np.iinfo(dt).max >= 0x55 else 5]
    x = np.array(vals, dt)
    pop, lead = _np(lax.population_count(x)), _np(lax.clz(x))
    assert pop.dtype == lead.dtype == np.dtype(dt)
    for v, p, c in zip(vals, pop.tolist(), lead.tolist()):
        pattern = v & ((1 << bits) - 1)
        assert p == bin(pattern).count("1"), v
        assert c == bits - len(bin(pattern)[2:].lstrip("0") or ""), v


def test_bitwise_ops():
    a, b = np.array([0b1100, -1], np.int8), np.array([0b1010, 5], np.int8)
    np.testing.assert_array_equal(_np(lax.bitwise_and(a, b)), [0b1000, 5])
    np.testing.assert_array_equal(_np(lax.bitwise_or(a, b)), [0b1110, -1])
    np.testing.assert_array_equal(_np(lax.bitwise_xor(a, b)), [0b0110, -6])
    np.testing.assert_array_equal(_np(lax.bitwise_not(a)), [~0b1100, 0])
    np.testing.assert_array_equal(_np(lax.bitwise_not(np.array([True, False]))), [False, True])
    np.testing.assert_array_equal(_np(lax.bitwise_not(np.array([0, 255], np.uint8))), [255, 0])


# ---------------------------------------------------------------------------------------------
# Powers, complex parts, comparisons.


def test_integer_pow():
    x = np.array([-3, 2, 5], np.int32)
    for y in range(0, 6):
        np.testing.assert_array_equal(_np(lax.integer_pow(x, y)), [_wrap(v**y, "int32") for v in x.tolist()])
    assert int(lax.integer_pow(np.int8(3), 5)) == _wrap(243, "int8")
    np.testing.assert_allclose(_np(lax.integer_pow(np.float32(2), -3)), 0.125)
    np.testing.assert_allclose(_np(lax.integer_pow(np.complex64(1j), 2)), -1)


def test_pow_integer_exponent():
    x = np.array([2.0, -2.0, 0.0], np.float32)
    got = lax.pow(x, np.array([3, 3, -1], np.int32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(_np(got), [8.0, -8.0, np.inf])
    np.testing.assert_allclose(_np(lax.pow(x[:2], np.float32(0.5)))[0], math.sqrt(2), rtol=1e-6)
    assert np.isnan(_np(lax.pow(np.float32(-2), np.float32(0.5))))


def test_complex_parts():
    z = lax.complex(np.array([1.0, 0.0], np.float32), np.array([np.inf, -2.0], np.float32))
    assert z.dtype == np.complex64
    zz = _np(z)
    assert zz[0].real == 1.0 and zz[0].imag == np.inf  # not nan + inf j
    assert lax.real(z).dtype == lax.imag(z).dtype == np.float32
    np.testing.assert_array_equal(_np(lax.imag(lax.conj(z))), [-np.inf, 2.0])
    c = lax.conj(np.array([1.5], np.float32))
    assert c.dtype == np.complex64 and _np(c)[0] == 1.5


def test_comparisons():
    x = np.array([1.0, np.nan, -0.0], np.float32)
    y = np.array([2.0, np.nan, 0.0], np.float32)
    np.testing.assert_array_equal(_np(lax.eq(x, y)), [False, False, True])
    np.testing.assert_array_equal(_np(lax.ne(x, y)), [True, True, False])
    np.testing.assert_array_equal(_np(lax.lt(x, y)), [True, False, False])
    np.testing.assert_array_equal(_np(lax.ge(x, y)), [False, False, True])
    t, f = np.array([True]), np.array([False])
    assert bool(_np(lax.gt(t, f))[0]) and bool(_np(lax.le(f, t))[0])
    assert lax.eq(np.complex64(1j), np.complex64(1j)).dtype == np.bool_
    got = lax.lt(np.array([-1], np.int8), np.array([1], np.int8))
    assert got.dtype == np.bool_ and bool(_np(got)[0])
    assert bool(lax.gt(np.array(200, np.uint8), np.array(100, np.uint8)))


def test_weak_types_propagate():
    assert lax.add(1.0, 2.0).weak_type
    assert not lax.add(np.float32(1), 2.0).weak_type
    assert lax.add(np.float32(1), 2.0).dtype == np.float32
    assert lax.sin(1.0).weak_type and lax.is_finite(1.0).dtype == np.bool_
    assert lax.mul(np.ones(2, ml_dtypes.bfloat16), 2.0).dtype == ml_dtypes.bfloat16


def test_staged_params_print_like_jax():
    jaxpr = str(
        morphax.make_jaxpr(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN))(np.ones(2, np.float32))
    )
    assert "round[rounding_method=1]" in jaxpr
    jaxpr = str(morphax.make_jaxpr(lambda x: lax.integer_pow(x, -2))(np.ones(2, np.float32)))
    assert "integer_pow[y=-2]" in jaxpr
    jaxpr = str(morphax.make_jaxpr(lax.conj)(np.ones(2, np.float32)))
    assert "conj[input_dtype=float32]" in jaxpr and "c64[2]" in jaxpr
    jaxpr = str(morphax.make_jaxpr(lax.reciprocal)(np.ones(2, np.float32)))
    assert "integer_pow[y=-1]" in jaxpr


# ---------------------------------------------------------------------------------------------
# Bad input.


def test_add_mixed_dtypes_names_both():
    with pytest.raises(TypeError) as e:
        lax.add(np.ones(3, np.float32), np.ones(3, np.int32))
    msg = str(e.value)
    assert "add" in msg and "float32" in msg and "int32" in msg


def test_add_bad_shapes_names_shapes():
    with pytest.raises(TypeError) as e:
        lax.add(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    msg = str(e.value)
    assert "add" in msg and "(2, 3)" in msg and "(3, 2)" in msg


def test_sin_of_int_names_sin_and_dtype():
    with pytest.raises(TypeError) as e:
        lax.sin(np.ones(3, np.int32))
    msg = str(e.value)
    assert "sin" in msg and "int32" in msg


@pytest.mark.parametrize(
    "fn,args,words",
    [
        (lax.integer_pow, (np.ones(3, np.int32), -1), ("integer_pow", "negative")),
        (lax.pow, (np.ones(3, np.int32), np.ones(3, np.int32)), ("pow", "int32")),
        (lax.pow, (np.ones(3, np.float32), np.ones(3, np.float16)), ("pow", "float32", "float16")),
        (lax.complex, (np.ones(3, np.float16), np.ones(3, np.float16)), ("complex", "float16")),
        (lax.conj, (np.ones(3, np.int32),), ("conj", "int32")),
        (lax.lt, (np.ones(3, np.complex64), np.ones(3, np.complex64)), ("lt", "complex64")),
        (lax.shift_left, (np.ones(3, np.float32), np.ones(3, np.float32)), ("shift_left", "float32")),
        (lax.bitwise_and, (np.ones(3, np.float32), np.ones(3, np.float32)), ("and", "float32")),
        (lax.rem, (np.ones(3, np.complex64), np.ones(3, np.complex64)), ("rem", "complex64")),
        (lax.floor, (np.ones(3, np.int32),), ("floor", "int32")),
        (lax.abs, (np.ones(3, np.uint8),), ("abs", "uint8")),
        (lax.mul, (np.ones(3, np.bool_), np.ones(3, np.bool_)), ("mul", "bool")),
        (lax.population_count, (np.ones(3, np.float32),), ("population_count", "float32")),
    ],
)
def test_bad_dtypes_raise_type_error(fn, args, words):
    with pytest.raises(TypeError) as e:
        fn(*args)
    for w in words:
        assert w in str(e.value)


def test_bad_static_params():
    with pytest.raises(TypeError, match="integer_pow"):
        lax.integer_pow(np.ones(3, np.float32), 1.5)
    with pytest.raises(ValueError):
        lax.round(np.ones(3, np.float32), rounding_method=7)
    with pytest.raises(TypeError, match="accuracy"):
        lax.sin(np.ones(3, np.float32), accuracy="high")
