"""Independent checks of the reductions: NumPy with explicit dtypes, hand-written NaN / empty /
wrapping cases, argmax/argmin NaN and tie rules, cumulative ops against Python loops, and errors."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import morphax as jax
from morphax import lax

AXES_CASES = [
    ((), ()),
    ((3,), ()),
    ((3,), (0,)),
    ((2, 3), (0,)),
    ((2, 3), (1,)),
    ((2, 3), (0, 1)),
    ((0,), (0,)),
    ((2, 0), (1,)),
    ((2, 0), (0,)),
    ((2, 0), (0, 1)),
]


def _eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,axes", AXES_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int8])
def test_sum_prod_match_numpy_in_dtype(shape, axes, dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(-4, 5, size=shape).astype(dtype)
    _eq(lax.reduce_sum(x, axes), np.sum(x, axis=axes, dtype=dtype))
    _eq(lax.reduce_prod(x, axes), np.prod(x, axis=axes, dtype=dtype))


@pytest.mark.parametrize("shape,axes", AXES_CASES)
def test_max_min_and_identities(shape, axes):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    _eq(lax.reduce_max(x, axes), np.max(x, axis=axes, initial=-np.inf).astype(np.float32))
    _eq(lax.reduce_min(x, axes), np.min(x, axis=axes, initial=np.inf).astype(np.float32))
    i = rng.integers(-9, 9, size=shape).astype(np.int32)
    _eq(lax.reduce_max(i, axes), np.max(i, axis=axes, initial=np.iinfo(np.int32).min))
    _eq(lax.reduce_min(i, axes), np.min(i, axis=axes, initial=np.iinfo(np.int32).max))


def test_empty_reduction_identities():
    e = np.zeros((0,), np.float32)
    assert float(lax.reduce_sum(e, (0,))) == 0.0
    assert float(lax.reduce_prod(e, (0,))) == 1.0
    assert float(lax.reduce_max(e, (0,))) == -math.inf
    assert float(lax.reduce_min(e, (0,))) == math.inf
    ei = np.zeros((0,), np.int8)
    assert int(lax.reduce_max(ei, (0,))) == -128 and int(lax.reduce_min(ei, (0,))) == 127
    eu = np.zeros((0,), np.uint32)
    assert int(lax.reduce_max(eu, (0,))) == 0 and int(lax.reduce_min(eu, (0,))) == 2**32 - 1
    eb = np.zeros((0,), bool)
    assert bool(lax.reduce_and(eb, (0,))) is True
    assert bool(lax.reduce_or(eb, (0,))) is False
    assert bool(lax.reduce_xor(eb, (0,))) is False
    assert bool(lax.reduce_max(eb, (0,))) is False and bool(lax.reduce_min(eb, (0,))) is True
    assert int(lax.reduce_and(np.zeros((0,), np.int32), (0,))) == -1
    assert int(lax.reduce_and(np.zeros((0,), np.uint8), (0,))) == 255
    assert lax.reduce_sum(np.zeros((2, 0), np.float32), (1,)).shape == (2,)


def test_nan_propagation_in_max_min_sum():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, np.inf]], np.float32)
    _eq(lax.reduce_max(x, (1,)), np.array([np.nan, np.inf], np.float32))
    _eq(lax.reduce_min(x, (1,)), np.array([np.nan, -np.inf], np.float32))
    _eq(lax.reduce_sum(x, (1,)), np.array([np.nan, np.nan], np.float32))
    b = x.astype(ml_dtypes.bfloat16)
    assert np.isnan(np.asarray(lax.reduce_max(b, (1,))).astype(np.float32)[0])


def test_integer_sum_wraps_not_upcast():
    x = np.array([100, 100, 100], np.int8)
    got = lax.reduce_sum(x, (0,))
    assert got.dtype == np.int8 and int(got) == 300 - 256
    u = np.array([200, 100], np.uint8)
    assert int(lax.reduce_sum(u, (0,))) == 44
    assert int(lax.reduce_prod(np.array([16, 16], np.uint8), (0,))) == 0
    big = np.full(3, 2**31 - 1, np.int32)
    assert int(lax.reduce_sum(big, (0,))) == int(np.int32(3 * (2**31 - 1) - 2**32))


def test_bfloat16_sum_rounds_once():
    # 1 + 256 * 2**-8 in float32 is 2; bfloat16 step-by-step accumulation would stall at 1.
    x = np.concatenate([[1.0], np.full(256, 2.0**-8)]).astype(ml_dtypes.bfloat16)
    got = lax.reduce_sum(x, (0,))
    assert got.dtype == np.dtype(ml_dtypes.bfloat16) and float(got) == 2.0


def test_logical_reductions():
    b = np.array([[True, False, True], [True, True, True]])
    _eq(lax.reduce_and(b, (1,)), np.array([False, True]))
    _eq(lax.reduce_or(b, (0,)), np.array([True, True, True]))
    _eq(lax.reduce_xor(b, (1,)), np.array([False, True]))
    i = np.array([0b1100, 0b1010, 0b1001], np.uint8)
    assert int(lax.reduce_and(i, (0,))) == 0b1000
    assert int(lax.reduce_or(i, (0,))) == 0b1111
    assert int(lax.reduce_xor(i, (0,))) == 0b1100 ^ 0b1010 ^ 0b1001


def test_weak_type_kept_and_jaxpr():
    w = lax.reduce_sum(lax.mul(np.ones((2, 3), np.float32), 2.0), (0,))
    assert not w.weak_type
    closed = jax.make_jaxpr(lambda x: lax.reduce_max(x, (1,)))(np.ones((2, 3), np.float32))
    assert "reduce_max[axes=(1,)]" in str(closed)
    closed = jax.make_jaxpr(lambda: lax.reduce_sum(2.0, ()))()
    assert closed.out_avals[0].weak_type


# ------------------------------------------------------------------------------------------------
# argmax / argmin


def _py_argmax(row, better):
    best = 0
    for i, v in enumerate(row):
        if math.isnan(row[best]):
            break
        if math.isnan(v) or better(v, row[best]):
            best = i
    return best


def test_argmax_argmin_nan_and_ties():
    rows = np.array(
        [
            [1.0, np.nan, 3.0, np.nan],
            [2.0, 5.0, 5.0, 1.0],
            [-0.0, 0.0, -1.0, -1.0],
            [np.inf, np.nan, np.inf, 0.0],
            [-np.inf, -np.inf, -np.inf, -np.inf],
        ],
        np.float32,
    )
    amax = np.asarray(lax.argmax(rows, 1, np.int32))
    amin = np.asarray(lax.argmin(rows, 1, np.int32))
    assert amax.dtype == np.int32
    assert amax.tolist() == [_py_argmax(r, lambda a, b: a > b) for r in rows.tolist()] == [1, 1, 0, 1, 0]
    assert amin.tolist() == [_py_argmax(r, lambda a, b: a < b) for r in rows.tolist()] == [1, 3, 2, 1, 0]
    assert np.asarray(lax.argmax(rows, 0, np.int32)).tolist() == [3, 0, 3, 0]
    for dt in (ml_dtypes.bfloat16, np.float16):
        assert np.asarray(lax.argmax(rows.astype(dt), 1, np.int32)).tolist() == [1, 1, 0, 1, 0]


def test_argmax_ints_bool_and_index_dtype():
    x = np.array([[3, 7, 7], [-1, -5, -1]], np.int8)
    got = lax.argmax(x, -1, np.int16)
    assert got.dtype == np.int16 and np.asarray(got).tolist() == [1, 0]
    assert np.asarray(lax.argmin(x, 1, np.int32)).tolist() == [0, 1]
    assert int(lax.argmax(np.array([False, True, True]), 0, np.int32)) == 1
    assert not lax.argmax(lax.mul(np.ones(3, np.float32), 1.0), 0, np.int32).weak_type
    text = str(jax.make_jaxpr(lambda x: lax.argmax(x, 0, np.int64))(np.ones(3, np.float32)))
    assert "argmax[axes=(0,) index_dtype=int32]" in text  # x32 canonicalizes the index dtype


# ------------------------------------------------------------------------------------------------
# Cumulative reductions vs Python loops.


def _loop_cum(x, axis, reverse, op):
    x = np.moveaxis(np.asarray(x), axis, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        order = range(len(row) - 1, -1, -1) if reverse else range(len(row))
        acc = None
        for j in order:
            acc = row[j] if acc is None else op(acc, row[j])
            out[idx + (j,)] = acc
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((2, 4), 1), ((3, 2), 0), ((0,), 0), ((2, 0), 1)])
def test_cumulative_match_loops(shape, axis, reverse):
    rng = np.random.default_rng(2)
    i = rng.integers(-3, 4, size=shape).astype(np.int32)
    with np.errstate(over="ignore"):
        _eq(lax.cumsum(i, axis, reverse), _loop_cum(i, axis, reverse, lambda a, b: a + b))
        _eq(lax.cumprod(i, axis, reverse), _loop_cum(i, axis, reverse, lambda a, b: a * b))
    _eq(lax.cummax(i, axis, reverse), _loop_cum(i, axis, reverse, max))
    _eq(lax.cummin(i, axis, reverse), _loop_cum(i, axis, reverse, min))
    f = rng.standard_normal(shape).astype(np.float64)
    want = _loop_cum(f, axis, reverse, lambda a, b: max(a, b) + math.log1p(math.exp(-abs(a - b))))
    got = lax.cumlogsumexp(f.astype(np.float32), axis, reverse)
    np.testing.assert_allclose(np.asarray(got), want.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_cumulative_edge_values():
    assert np.asarray(lax.cumsum(np.array([100, 100, 100], np.int8))).tolist() == [100, -56, 44]
    x = np.array([1.0, np.nan, 5.0, 0.0], np.float32)
    got = np.asarray(lax.cummax(x))
    assert got[0] == 1.0 and np.isnan(got[1:]).all()
    got = np.asarray(lax.cummin(x, reverse=True))
    assert np.isnan(got[:2]).all() and got[2:].tolist() == [0.0, 0.0]
    # Stable for large inputs where exp overflows.
    big = np.array([1000.0, 1000.0, -np.inf], np.float32)
    np.testing.assert_allclose(
        np.asarray(lax.cumlogsumexp(big)), [1000.0, 1000.0 + math.log(2), 1000.0 + math.log(2)]
    )
    assert np.asarray(lax.cumlogsumexp(np.array([-np.inf, -np.inf], np.float32))).tolist() == [
        -np.inf,
        -np.inf,
    ]
    assert "cumsum[axis=1 reverse=True]" in str(
        jax.make_jaxpr(lambda x: lax.cumsum(x, axis=-1, reverse=True))(np.ones((2, 3), np.float32))
    )


# ------------------------------------------------------------------------------------------------
# Bad inputs.


def test_reduction_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(
        ValueError, match=r"reduce_sum: axis 2 is out of bounds for an operand of shape \(2, 3\)"
    ):
        lax.reduce_sum(x, (2,))
    with pytest.raises(ValueError, match="reduce_max: duplicate value in 'axes'"):
        lax.reduce_max(x, (1, -1))
    with pytest.raises(
        ValueError, match=r"reduce_sum: reduction axes \(5,\) contain an out-of-bounds axis 5 .* f32\[2,3\]"
    ):
        lax.reduce_sum_p.bind(x, axes=(5,))
    with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
        lax.reduce_sum(np.ones(3, bool), (0,))
    with pytest.raises(TypeError, match="reduce_and does not accept dtype float32"):
        lax.reduce_and(x, (0,))
    with pytest.raises(
        ValueError, match=r"argmax requires a non-empty reduced dimension, got operand of shape \(2, 0\)"
    ):
        lax.argmax(np.ones((2, 0), np.float32), 1, np.int32)
    with pytest.raises(TypeError, match="argmin: index_dtype must be an integer type, got float32"):
        lax.argmin(x, 0, np.float32)
    with pytest.raises(TypeError, match="argmax does not accept dtype complex64"):
        lax.argmax(np.ones(3, np.complex64), 0, np.int32)
    with pytest.raises(ValueError, match=r"cumsum: axis 3 is out of bounds for an operand of shape \(2, 3\)"):
        lax.cumsum(x, 3)
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        lax.cumlogsumexp(np.ones(3, np.int32))
